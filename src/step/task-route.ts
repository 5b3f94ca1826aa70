/**
 * Whether a task request arrived on its step's route. A step is scheduled with a path (its
 * query, if any, included); the queue sends its task to that path appended to the path of its
 * target URL, the queue's base path (`/api` for `https://app.example.com/api`, '' for none). The
 * request's path, its query left aside, must be the step's path or the base path followed by it,
 * whole: a path that merely ends with the step's (`/admin/charge` for `/charge`) is another route,
 * and so is one that names it in its query (`/refund?then=/charge`). The query is compared on its
 * own and must be the step's, exactly.
 */

/** A URL's path and its query (with its `?`, '' when it has none). */
function splitQuery(url: string): { path: string; query: string } {
  const at = url.indexOf('?');
  return at === -1 ? { path: url, query: '' } : { path: url.slice(0, at), query: url.slice(at) };
}

/**
 * True when `requestUrl` (path and query, as received: Express's `req.originalUrl`) is the route of
 * the step scheduled with `stepPath`, for a queue whose target URL has the path `basePath`.
 */
export function onStepRoute(requestUrl: string, stepPath: string, basePath: string): boolean {
  const request = splitQuery(requestUrl);
  const step = splitQuery(stepPath);
  if (request.query !== step.query) return false;
  return request.path === step.path || request.path === basePath.replace(/\/+$/, '') + step.path;
}
