/**
 * Cloud Tasks' dispatcher, on loopback: it takes the tasks the real CloudTasksClient created on the
 * loopback Cloud Tasks server and delivers them as Cloud Tasks does. An HTTP task is POSTed to its
 * URL with its headers and body, an OIDC token for its `oidcToken` (signed by the loopback issuer:
 * audience = `oidcToken.audience`, or the URL), and the `X-CloudTasks-*` headers; an App Engine
 * task goes through the App Engine front, which sets the `X-AppEngine-*` headers. Each attempt is
 * cut at the task's dispatch deadline (10 min when unset). A 2xx ends the task; anything else
 * (5xx, 429, 4xx, a cut) is retried after the queue's exponential backoff, never sooner because
 * of `Retry-After` (Cloud Tasks ignores it for HTTP targets in general). A task's name is
 * delivered to completion once, however often it was created.
 */
import { createHash } from 'node:crypto';
import type { CloudTasksServer, DecodedTask } from './cloud-tasks-server';
import { idTokenClaims, type OidcIssuer } from './oidc-issuer';
import type { AppEngineFront } from './app-engine-front';

/** The queue's retry config (`gcloud tasks queues create --min-backoff ...`). */
export interface RetryConfig {
  minBackoffMs: number;
  maxBackoffMs: number;
  maxDoublings: number;
  /** -1 for unlimited. */
  maxAttempts: number;
}

/** What the dispatcher needs. */
export interface DispatcherOptions {
  server: CloudTasksServer;
  /** The queue's id, sent as X-CloudTasks-QueueName / X-AppEngine-QueueName. */
  queue: string;
  issuer?: OidcIssuer;
  appEngine?: AppEngineFront;
  retry: RetryConfig;
}

/** One delivery attempt. */
export interface Attempt {
  task: string;
  path: string;
  /** The answer's status; 0 when the attempt was cut at the dispatch deadline or the connection failed. */
  status: number;
  /** The Retry-After the answer carried, which did not change the backoff. */
  retryAfter?: string;
  /** How long the dispatcher waited before the next attempt (ms), when it retried. */
  backoffMs?: number;
}

/** The running dispatcher. */
export interface CloudTasksDispatcher {
  readonly attempts: readonly Attempt[];
  /** Stops delivering; waits for attempts in flight. */
  stop(): Promise<void>;
}

/** The backoff before retry `n` (n = 1 for the first retry), as Cloud Tasks computes it. */
export function backoffMs(retry: RetryConfig, n: number): number {
  const doublings = Math.min(n - 1, retry.maxDoublings);
  const doubled = retry.minBackoffMs * 2 ** doublings;
  const linear = n - 1 > retry.maxDoublings ? retry.minBackoffMs * 2 ** retry.maxDoublings * (n - 1 - retry.maxDoublings) : 0;
  return Math.min(retry.maxBackoffMs, doubled + linear);
}

/** Starts delivering every task created on `server`, from the first call on. */
export function startDispatcher(options: DispatcherOptions): CloudTasksDispatcher {
  const attempts: Attempt[] = [];
  const seen = new Set<string>();
  const running = new Set<Promise<void>>();
  let stopped = false;
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

  async function run(task: DecodedTask, name: string): Promise<void> {
    const eta = (task.scheduleTime?.seconds ?? 0) * 1000 - Date.now();
    if (eta > 0) await sleep(eta);
    for (let n = 0; !stopped; n++) {
      const attempt = await deliver(task, name, n);
      attempts.push(attempt);
      if (attempt.status >= 200 && attempt.status < 300) return;
      if (options.retry.maxAttempts !== -1 && n + 1 >= options.retry.maxAttempts) return;
      attempt.backoffMs = backoffMs(options.retry, n + 1);
      await sleep(attempt.backoffMs);
    }
  }

  async function deliver(task: DecodedTask, name: string, retries: number): Promise<Attempt> {
    const deadlineMs = (task.dispatchDeadline?.seconds ?? 600) * 1000 + (task.dispatchDeadline?.nanos ?? 0) / 1e6;
    const signal = AbortSignal.timeout(deadlineMs);
    try {
      if (task.appEngineHttpRequest !== undefined) {
        if (options.appEngine === undefined) throw new Error('an App Engine task, but no App Engine front');
        const ae = task.appEngineHttpRequest;
        const res = await options.appEngine.fromCloudTasks(ae.relativeUri ?? '/', {
          queue: options.queue, taskName: name, retryCount: retries, headers: ae.headers ?? {}, body: ae.body, signal,
        });
        return { task: name, path: ae.relativeUri ?? '/', status: res.status, retryAfter: res.headers.get('retry-after') ?? undefined };
      }
      const http = task.httpRequest;
      if (http?.url === undefined) throw new Error('a task with neither target');
      const headers: Record<string, string> = {
        ...http.headers,
        'x-cloudtasks-queuename': options.queue,
        'x-cloudtasks-taskname': name,
        'x-cloudtasks-taskretrycount': String(retries),
        'x-cloudtasks-taskexecutioncount': String(retries),
        'x-cloudtasks-tasketa': String(task.scheduleTime?.seconds ?? Math.floor(Date.now() / 1000)),
      };
      if (http.oidcToken?.serviceAccountEmail !== undefined) {
        if (options.issuer === undefined) throw new Error('an OIDC task, but no issuer');
        const claims = idTokenClaims({ aud: http.oidcToken.audience || http.url, email: http.oidcToken.serviceAccountEmail });
        headers.authorization = `Bearer ${options.issuer.sign(claims)}`;
      }
      const res = await fetch(http.url, { method: http.httpMethod ?? 'POST', headers, body: http.body, signal });
      await res.arrayBuffer();
      return { task: name, path: new URL(http.url).pathname, status: res.status, retryAfter: res.headers.get('retry-after') ?? undefined };
    } catch {
      return { task: name, path: task.httpRequest?.url ? new URL(task.httpRequest.url).pathname : task.appEngineHttpRequest?.relativeUri ?? '', status: 0 };
    }
  }

  const poll = (async () => {
    let next = 0;
    while (!stopped) {
      for (; next < options.server.calls.length; next++) {
        const task = options.server.calls[next]!.task;
        if (task === undefined) continue;
        const name = task.name?.split('/').pop() ?? createHash('sha256').update(JSON.stringify(task)).digest('hex').slice(0, 16);
        if (seen.has(name)) continue; // a name is taken once
        seen.add(name);
        const job = run(task, name).finally(() => running.delete(job));
        running.add(job);
      }
      await sleep(20);
    }
  })();

  return {
    attempts,
    stop: async () => {
      stopped = true;
      await poll;
      await Promise.all([...running]);
    },
  };
}
