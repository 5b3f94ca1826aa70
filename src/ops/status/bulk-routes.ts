/**
 * The status router's bulk actions (docs/guides/operating.md, "Bulk actions"):
 *
 *   GET  /bulk?action=&kind=&namespace=&kickoff=&fanOut=   the count, and a form to confirm (nothing is done)
 *   POST /bulk                   the confirmation (CSRF, authenticated): starts the operation the form's id names, once; 303 to its page
 *   GET  /operation?id=          an operation's page; `/operation.json?id=` as JSON
 *   GET  /operations             the newest operations; `/operations.json?limit=` as JSON
 *   POST /operations/step        a task route (not the operator's): runs the next page of an operation
 *
 * The confirm page mints the operation's id and its form carries it: posted twice (a double
 * click, a retried POST), the confirmation starts one operation; the second answers the first.
 */
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { BadRequestError } from '../../errors/errors';
import { checkBulk, describeBulk, type BulkAction, type BulkFilter } from '../bulk/filter';
import { OPERATION_ID } from '../bulk/operation';
import { newOperationId } from '../bulk/start';
import { MAX_OPERATIONS, type OperationView } from '../bulk/view';
import { CSRF_FIELD, csrfRefusal } from './csrf';
import { renderMessage, type PageContext } from './page';
import { operationPath, renderConfirm, renderOperation, renderOperations } from './operation-page';
import type { StatusConfig } from './options';
import type { Inspector } from '../inspect/inspector';
import type { BulkOptions, BulkStarted } from '../bulk/start';
import type { TargetCount } from '../bulk/targets';
import type { Logger } from '../../types';

/** What the bulk routes need from the Locker (the status router's backend has it). */
export interface BulkBackend {
  inspect(): Inspector;
  /** Starts a bulk operation (`locker.bulk()`), its filter's kind checked against the page's kinds. */
  bulk(action: BulkAction, filter: BulkFilter, options: BulkOptions, kinds: readonly string[]): Promise<BulkStarted>;
  /** How many targets a bulk action would act on now; throws `BadRequestError` for a bad action or filter. */
  countBulk(action: unknown, filter: unknown, kinds: readonly string[]): Promise<TargetCount>;
  /** The task route of bulk operations' steps (a `locker.handle()` route). */
  readonly operationStep: RequestHandler;
  readonly config: { readonly logger: Logger; readonly clock: () => number };
}

/** What the router hands its bulk routes: the authentication in front of the operator's routes, its error handling, and the page's context. */
export interface BulkRouteTools {
  readonly auth: RequestHandler[];
  handler(fn: (req: Request, res: Response) => Promise<void>): RequestHandler;
  pageContext(config: StatusConfig, req: Request, res: Response): PageContext;
}

/** Mounts the bulk routes on `router`. */
export function bulkRoutes(router: Router, backend: BulkBackend, config: StatusConfig, tools: BulkRouteTools): void {
  const { auth, handler, pageContext } = tools;
  router.post('/operations/step', backend.operationStep);
  router.get('/bulk', auth, handler(async (req, res) => {
    const { action, filter } = readBulk(config, req.query as Record<string, unknown>);
    const count = await backend.countBulk(action, filter, config.kinds);
    const ctx = pageContext(config, req, res);
    const view = { action, filter, description: describeBulk(action, filter), count, id: newOperationId() };
    res.type('html').set('Cache-Control', 'no-store').send(renderConfirm(view, ctx));
  }));
  router.post('/bulk', auth, express.urlencoded({ extended: false, limit: '8kb' }), handler(async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const refusal = csrfRefusal(req, body[CSRF_FIELD]);
    if (refusal) {
      backend.config.logger.warn('status page bulk action refused', { reason: refusal });
      res.status(403).set('Cache-Control', 'no-store').type('html').send(renderMessage('Not done', `Refused: ${refusal}.`, { base: req.baseUrl }));
      return;
    }
    const { action, filter } = readBulk(config, body);
    const id = body.id;
    if (typeof id !== 'string' || !OPERATION_ID.test(id)) throw new BadRequestError('the form has no operation id (reload the confirm page)');
    const principal = res.locals.principal as string | undefined;
    const started = await backend.bulk(action, filter, { mount: req.baseUrl, id, ...(principal ? { by: principal } : {}) }, config.kinds);
    backend.config.logger.info(`status page: bulk ${action} ${started.created ? 'started' : 'already started'}`, { operation: id, by: principal });
    res.redirect(303, operationPath(req.baseUrl, id, filter.namespace));
  }));
  router.get('/operation', auth, handler(async (req, res) => {
    const op = await readOperation(backend, config, req.query);
    res.type('html').set('Cache-Control', 'no-store').send(renderOperation(op, pageContext(config, req, res), config.refreshSeconds));
  }));
  router.get('/operation.json', auth, handler(async (req, res) => {
    res.set('Cache-Control', 'no-store').json(await readOperation(backend, config, req.query));
  }));
  router.get('/operations', auth, handler(async (req, res) => {
    const ops = await backend.inspect().operations({ limit: readLimit(req.query.limit), namespaces: config.namespaces });
    res.type('html').set('Cache-Control', 'no-store').send(renderOperations(ops, pageContext(config, req, res), config.refreshSeconds));
  }));
  router.get('/operations.json', auth, handler(async (req, res) => {
    const ops = await backend.inspect().operations({ limit: readLimit(req.query.limit), namespaces: config.namespaces });
    res.set('Cache-Control', 'no-store').json({ now: new Date(backend.config.clock()).toISOString(), operations: ops });
  }));
}

/** The action and filter of a confirm page's query or a confirmation's form; `BadRequestError` when wrong. */
function readBulk(config: StatusConfig, fields: Record<string, unknown>): ReturnType<typeof checkBulk> {
  const text = (name: string): string | undefined => {
    const value = fields[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string') throw new BadRequestError(`${name} must be given once, as text`);
    return value;
  };
  const filter: BulkFilter = {};
  for (const name of ['kind', 'namespace', 'kickoff', 'fanOut'] as const) {
    const value = text(name);
    if (value !== undefined && (value !== '' || name === 'namespace')) filter[name] = value;
  }
  if (filter.namespace === '') delete filter.namespace;
  if (!config.namespaces.includes(filter.namespace ?? '')) throw new BadRequestError('that namespace is not one this page lists');
  return checkBulk(text('action'), filter, config.kinds);
}

/** The operation `?id=&namespace=` names (its namespace is its targets'; default: the default one). */
async function readOperation(backend: BulkBackend, config: StatusConfig, query: Record<string, unknown>): Promise<OperationView> {
  const { id, namespace } = query;
  if (typeof id !== 'string' || !OPERATION_ID.test(id)) throw new BadRequestError('id must be an operation id');
  if (namespace !== undefined && (typeof namespace !== 'string' || !config.namespaces.includes(namespace))) throw new BadRequestError('that namespace is not one this page lists');
  const op = await backend.inspect().operation(id, namespace === '' ? undefined : namespace);
  if (!op) throw new BadRequestError(`no operation ${id}`);
  return op;
}

function readLimit(value: unknown): number {
  if (value === undefined) return 20;
  if (typeof value !== 'string' || !/^\d{1,3}$/.test(value) || Number(value) < 1 || Number(value) > MAX_OPERATIONS) throw new BadRequestError(`limit must be 1 to ${MAX_OPERATIONS}`);
  return Number(value);
}
