/**
 * App Engine's front, on loopback. A request from outside reaches the app with every
 * `X-AppEngine-*` header removed (App Engine strips them, so only its own services can set them).
 * Requests from App Engine's own services go in with theirs set: Cloud Tasks App Engine targets
 * (`X-AppEngine-QueueName`, `-TaskName`, `-TaskRetryCount`, `-TaskExecutionCount`, `-TaskETA`)
 * and cron (`X-Appengine-Cron: true`, a GET from 0.1.0.2).
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A Cloud Tasks App Engine-target delivery. */
export interface AppEngineTaskDelivery {
  queue: string;
  taskName: string;
  retryCount: number;
  headers: Record<string, string>;
  body?: Buffer;
  signal?: AbortSignal;
}

/** One request as the front saw it, with the X-AppEngine-* headers it removed. */
export interface AppEngineFrontEntry {
  from: 'outside' | 'cloud-tasks' | 'cron';
  method: string;
  path: string;
  stripped: string[];
}

/** The running front. */
export interface AppEngineFront {
  /** The app's URL as the world reaches it. */
  readonly url: string;
  readonly log: readonly AppEngineFrontEntry[];
  /** A task delivered by Cloud Tasks to an App Engine target. */
  fromCloudTasks(relativeUri: string, delivery: AppEngineTaskDelivery): Promise<Response>;
  /** A call by App Engine cron (cron.yaml's url). */
  fromCron(path: string): Promise<Response>;
  close(): Promise<void>;
}

/** Drops every X-AppEngine-* header (any case), returning the names it dropped. */
function strip(headers: IncomingHttpHeaders | Record<string, string>): string[] {
  const dropped = Object.keys(headers).filter((name) => name.toLowerCase().startsWith('x-appengine-'));
  for (const name of dropped) delete (headers as Record<string, unknown>)[name];
  return dropped;
}

/** Starts the front on a free loopback port in front of `upstream` (`http://127.0.0.1:PORT`). */
export async function startAppEngineFront(upstream: string): Promise<AppEngineFront> {
  const log: AppEngineFrontEntry[] = [];
  const server = createServer((req, res) => {
    const headers = { ...req.headers };
    log.push({ from: 'outside', method: req.method ?? '', path: req.url ?? '', stripped: strip(headers) });
    const target = new URL(req.url ?? '/', upstream);
    const inner = httpRequest(target, { method: req.method, headers: { ...headers, host: target.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    inner.on('error', () => { if (!res.headersSent) res.writeHead(503).end(); });
    req.pipe(inner);
  });
  const url = await new Promise<string>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
  return {
    url,
    log,
    fromCloudTasks: (relativeUri, d) => {
      const headers: Record<string, string> = { ...d.headers };
      const stripped = strip(headers);
      log.push({ from: 'cloud-tasks', method: 'POST', path: relativeUri, stripped });
      Object.assign(headers, {
        'x-appengine-queuename': d.queue,
        'x-appengine-taskname': d.taskName,
        'x-appengine-taskretrycount': String(d.retryCount),
        'x-appengine-taskexecutioncount': String(d.retryCount),
        'x-appengine-tasketa': String(Date.now() / 1000),
      });
      return fetch(new URL(relativeUri, upstream), { method: 'POST', headers, body: d.body, signal: d.signal });
    },
    fromCron: (path) => {
      log.push({ from: 'cron', method: 'GET', path, stripped: [] });
      return fetch(new URL(path, upstream), { headers: { 'x-appengine-cron': 'true', 'x-forwarded-for': '0.1.0.2' } });
    },
    close: () => new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}
