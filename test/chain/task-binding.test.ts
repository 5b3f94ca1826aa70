// A task request is bound to its step's route and body: handle() reads the step's ledger record with
// the entity (one lookup) and answers 400, running and writing nothing, when the request's path or
// body is not the record's, also when the request leaves X-Lock-Chain out. The genuine task still
// runs, and so does a task the sweep re-sent. The route is the request's path, its query aside, as a
// whole: a path that only ends with the step's (`/admin/charge` for `/charge`) or a query that names
// it (`/refund?then=/charge`) is another route; the queue's base path (its target URL's) may come
// first. A LocalQueue task is also bound to its signed body: another body is answered 401 before the
// store is read, also with a store that cannot read the ledger record with the entity (the signature
// is then the only check). On the memory store and on both Datastore emulators.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { DatastoreStore } from '../../src/store/datastore/store';
import { MemoryStore } from '../../src/store/memory/store';
import type { Store, TaskRequest } from '../../src/types';
import { createServer, Server, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LocalQueue } from '../../src/queue/local';
import { firestoreDatastore, legacyDatastore, uniqueNamespace } from '../support/emulator';
import { LedgerBlindStore } from '../support/ledger-blind-store';
import { RecordingQueue } from '../support/recording-queue';
import { MemoryLogger, testAuth, TEST_TOKEN } from '../support/task-app';

const stores: Array<[string, () => { store: Store; namespace: string | undefined }]> = [
  ['memory store', () => ({ store: new MemoryStore({ projectId: 'shop' }), namespace: undefined })],
  ['Datastore emulator', () => {
    const namespace = uniqueNamespace('binding');
    return { store: new DatastoreStore(legacyDatastore(), { namespaces: [namespace] }), namespace };
  }],
  ['Firestore emulator in Datastore mode', () => {
    const namespace = uniqueNamespace('binding');
    return { store: new DatastoreStore(firestoreDatastore(), { namespaces: [namespace] }), namespace };
  }],
];

const keyIn = (namespace: string | undefined): Key =>
  new Key(namespace ? { namespace, path: ['Order', `o-${Math.random()}`] } : { path: ['Order', `o-${Math.random()}`] });

for (const [name, make] of stores) {
  describe(`a task is bound to its step's route and body (${name})`, () => {
    async function fixture() {
      const { store, namespace } = make();
      const queue = new RecordingQueue();
      const logger = new MemoryLogger();
      const locker = new Locker({ store, queue, authenticate: testAuth, logger });
      const runs: Array<{ route: string; payload: unknown }> = [];
      const app = express();
      for (const route of ['/charge', '/refund', '/admin/charge']) {
        app.post(route, locker.handle((ctx) => { runs.push({ route, payload: ctx.payload }); }, (p) => p));
      }
      const key = keyIn(namespace);
      await locker.schedule(key, { total: 5 }, '/charge', { amount: 5 });
      const task = queue.tasks[0]!;
      const post = (path: string, body: string, headers: Record<string, string> = task.headers) => {
        const req = request(app).post(path).set('x-test-auth', TEST_TOKEN).set('content-type', 'application/json');
        for (const [h, v] of Object.entries(headers)) req.set(h, v);
        return req.send(body);
      };
      const stored = async () => JSON.stringify((await store.read(key))?.properties);
      return { locker, store, queue, logger, runs, task, post, stored, key };
    }

    it('refuses the task on another route, with another body, or without its chain, and runs the genuine one', async () => {
      const { runs, task, post, stored, logger } = await fixture();
      const before = await stored();
      const { 'x-lock-chain': _chain, ...noChain } = lower(task);
      const forged = [
        { what: 'another route', res: await post('/refund', task.body) },
        { what: 'another body', res: await post('/charge', JSON.stringify({ amount: 5000 })) },
        { what: 'no body', res: await post('/charge', '') },
        { what: 'another route, no chain', res: await post('/refund', task.body, noChain) },
        { what: 'another body, no chain', res: await post('/charge', JSON.stringify({ amount: 5000 }), noChain) },
      ];
      for (const { what, res } of forged) {
        assert.equal(res.status, 400, what);
        assert.match(res.text, /^the request's (route|body) is not its step's/, what);
      }
      assert.deepEqual(runs, [], 'nothing ran');
      assert.equal(await stored(), before, 'nothing was written');
      assert.equal(logger.lines.filter((l) => l.message === 'task request refused: it does not match its step').length, forged.length);
      const genuine = await post(task.path, task.body);
      assert.equal(genuine.status, 200, genuine.text);
      assert.deepEqual(runs, [{ route: '/charge', payload: { amount: 5 } }]);
    });

    it('refuses the task on a route that only ends with its path, or that names it in its query, and runs the genuine one', async () => {
      const { runs, task, post, stored, logger } = await fixture();
      const before = await stored();
      for (const [what, path] of [['a query naming the route', '/refund?then=/charge'], ['a path ending with the route', '/admin/charge'], ['the route with a query', '/charge?then=/refund']] as const) {
        const res = await post(path, task.body);
        assert.equal(res.status, 400, what);
        assert.equal(res.text, "the request's route is not its step's", what);
      }
      assert.deepEqual(runs, [], 'no handler ran');
      assert.equal(await stored(), before, 'nothing was written');
      assert.equal(logger.lines.filter((l) => l.message === 'task request refused: it does not match its step').length, 3);
      const genuine = await post(task.path, task.body);
      assert.equal(genuine.status, 200, genuine.text);
      assert.deepEqual(runs, [{ route: '/charge', payload: { amount: 5 } }]);
    });

    it("takes the task on the queue's base path followed by its path, behind a router mounted there, and on no other route under it", async () => {
      const { store, namespace } = make();
      const queue = new RecordingQueue('/api/');
      const locker = new Locker({ store, queue, authenticate: testAuth, logger: new MemoryLogger() });
      const runs: string[] = [];
      const api = express.Router();
      for (const route of ['/charge', '/admin/charge']) api.post(route, locker.handle(() => { runs.push(route); }, (p) => p));
      const app = express();
      app.use('/api', api);
      const key = keyIn(namespace);
      await locker.schedule(key, { total: 5 }, '/charge', { amount: 5 });
      const task = queue.tasks[0]!;
      const post = (path: string) => {
        const req = request(app).post(path).set('x-test-auth', TEST_TOKEN).set('content-type', 'application/json');
        for (const [h, v] of Object.entries(task.headers)) req.set(h, v);
        return req.send(task.body);
      };
      for (const path of ['/api/admin/charge', '/api/charge?then=/admin']) assert.equal((await post(path)).status, 400, path);
      assert.deepEqual(runs, [], 'no handler ran');
      const genuine = await post('/api/charge');
      assert.equal(genuine.status, 200, genuine.text);
      assert.deepEqual(runs, ['/charge']);
    });

    it('runs a task the sweep re-sent (same record, new task name, X-Lock-Send)', async () => {

      const { locker, queue, runs, post } = await fixture();
      const resent = await locker.resend((await firstKey(locker, queue.tasks[0]!)));
      assert.ok(resent.task);
      const task = queue.tasks.at(-1)!;
      assert.equal(task.headers['X-Lock-Send'] ?? task.headers['x-lock-send'], '2');
      const res = await post(task.path, task.body, task.headers);
      assert.equal(res.status, 200, res.text);
      assert.equal(runs.length, 1);
    });
  });
}

for (const [name, make] of stores) {
  for (const blind of [false, true]) {
    describe(`a LocalQueue task is bound to its signed body (${blind ? `${name} without readWithLedger` : name})`, () => {
      for (const parser of [false, true]) {
        it(`answers 401 to a captured task replayed with another body, and runs nothing (${parser ? 'express.json() in front' : 'no body parser'})`, async () => {
          const made = make();
          const capture = await startCapture();
          const queue = new LocalQueue({ baseUrl: `${capture.url}/api`, logger: quiet });
          const logger = new MemoryLogger();
          const locker = new Locker({ store: blind ? new LedgerBlindStore(made.store) : made.store, queue, logger });
          const runs: unknown[] = [];
          const api = express.Router();
          for (const route of ['/charge', '/refund']) api.post(route, locker.handle((ctx) => { runs.push(ctx.payload); }, (p) => p));
          const app = express();
          if (parser) app.use(express.json());
          app.use('/api', api);
          const server = await listen(app);
          try {
            const key = keyIn(made.namespace);
            await locker.schedule(key, { total: 5 }, '/charge', { amount: 5 });
            await queue.idle();
            const captured = capture.received[0]!;
            assert.equal(captured.url, '/api/charge', 'the LocalQueue sends the task under its base path');
            const before = JSON.stringify((await made.store.read(key))?.properties);
            const replay = (body: string, path = captured.url) => fetch(`${server.url}${path}`, { method: 'POST', headers: captured.headers, body });

            const swapped = await replay(JSON.stringify({ amount: 5000 }));
            assert.equal(swapped.status, 401, await swapped.text());
            assert.equal((await replay('')).status, 401, 'no body');
            assert.equal((await replay(captured.body, '/api/refund')).status, 401, 'another route');
            assert.deepEqual(runs, [], 'no handler ran');
            assert.equal(JSON.stringify((await made.store.read(key))?.properties), before, 'nothing was written');
            assert.equal(logger.lines.filter((l) => l.fields?.reason === 'the body is not the one its credential signed').length, 2, 'each other body logged');

            const genuine = await replay(captured.body);
            assert.equal(genuine.status, 200, await genuine.text());
            assert.deepEqual(runs, [{ amount: 5 }], 'the genuine task ran, on its own body');
          } finally {
            await queue.shutdown();
            await locker.shutdown();
            await server.close();
            await capture.close();
          }
        });
      }
    });
  }
}

const quiet = { info: () => {}, warn: () => {}, error: () => {} };

/** Headers of one connection, not of the task. */
const HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

/** A loopback server that answers 200 to every request and keeps its path, headers and body: a task captured on its way. */
async function startCapture(): Promise<{ url: string; received: Array<{ url: string; headers: Record<string, string>; body: string }>; close(): Promise<void> }> {
  const received: Array<{ url: string; headers: Record<string, string>; body: string }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [n, v] of Object.entries(req.headers)) if (typeof v === 'string' && !HOP.has(n)) headers[n] = v;
      received.push({ url: req.url ?? '', headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end();
    });
  });
  return { ...(await listen(server)), received };
}

/** Listens on a free loopback port. */
async function listen(handler: Server | ((req: IncomingMessage, res: ServerResponse) => void)): Promise<{ url: string; close(): Promise<void> }> {
  const server = handler instanceof Server ? handler : createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

function lower(task: TaskRequest): Record<string, string> {

  return Object.fromEntries(Object.entries(task.headers).map(([n, v]) => [n.toLowerCase(), v]));
}

async function firstKey(locker: Locker, task: TaskRequest): Promise<Key> {
  return locker.decodeKey(lower(task)['x-lock-key']!);
}
