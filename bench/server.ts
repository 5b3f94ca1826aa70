/**
 * The app under measurement: a Locker on a store, one `handle()` route with a trivial handler,
 * listening on loopback; and a lean keep-alive HTTP client that sends task requests to it.
 */
import { Agent, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Key } from '@google-cloud/datastore';
import { Locker } from './library';
import type { LockerOptions } from '../src/config/options';
import { Headers, type Logger, type Properties, type Store } from '../src/types';

/** Logs nothing: the benchmark measures the library, not the console. */
const silent: Logger = { info() {}, warn() {}, error() {} };

/** What the handler turns stored properties into. */
class Counter {
  count: number;
  constructor(props: Properties) {
    this.count = typeof props.count === 'number' ? props.count : 0;
  }
}

/** An answer, as the client saw it. */
export interface Reply {
  status: number;
  body: string;
}

export interface StepServer {
  locker: Locker;
  /** Handler runs so far. */
  runs(): number;
  /** POSTs the task for step `seq` of `key` (of `chain`, named in `X-Lock-Chain` as every task the library sends does) and resolves with the answer. */
  send(key: Key, seq: number, chain?: string): Promise<Reply>;
  /** POSTs to a route that answers at once: the HTTP round trip alone. */
  ping(): Promise<Reply>;
  /** Closes every keep-alive connection, client and server side (new requests open new ones). */
  dropConnections(): void;
  close(): Promise<void>;
}

/** Starts the app on 127.0.0.1 (port 0) with a Locker on `store` and no authentication (and `options`). */
export async function startStepServer(store: Store, options: Pick<LockerOptions, 'telemetry'> = {}): Promise<StepServer> {
  const locker = new Locker({ store, authenticate: false, logger: silent, ...options });
  let runs = 0;
  const app = express();
  app.post('/task', locker.handle<Counter>((ctx) => {
    runs += 1;
    ctx.entity.count += 1;
  }, (props) => new Counter(props)));
  app.post('/noop', (_req, res) => {
    // The leanest answer Express can give: the status, two headers, the text (as handle() answers).
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.setHeader('Content-Length', 2);
    res.end('ok');
  });
  const server = await listen(app);
  const port = (server.address() as AddressInfo).port;
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  return {
    locker,
    runs: () => runs,
    send: (key, seq, chain) => post(agent, port, '/task', { [Headers.key]: locker.encodeKey(key), [Headers.seq]: String(seq), ...(chain === undefined ? {} : { [Headers.chain]: chain }) }),
    ping: () => post(agent, port, '/noop', {}),
    dropConnections() {
      agent.destroy();
      server.closeAllConnections();
    },
    async close() {
      agent.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      await locker.shutdown();
    },
  };
}

function listen(app: express.Express): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(0, '127.0.0.1', (error?: Error) => (error ? reject(error) : resolve(server)));
    // The client's keep-alive connections may sit idle for seconds (a cold emulator's first
    // transactions, seeding between parts): the server must not close one the client is about to
    // reuse, which the client sees as ECONNRESET (node's default closes them after 5 s).
    server.keepAliveTimeout = 10 * 60_000;
  });
}

function post(agent: Agent, port: number, path: string, headers: Record<string, string>): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { ...headers, 'content-length': '0' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
