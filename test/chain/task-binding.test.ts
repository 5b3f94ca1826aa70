// A task request is bound to its step's route and body: handle() reads the step's ledger record with
// the entity (one lookup) and answers 400, running and writing nothing, when the request's path or
// body is not the record's, also when the request leaves X-Lock-Chain out. The genuine task still
// runs, and so does a task the sweep re-sent. On the memory store and on the Datastore emulator.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { DatastoreStore } from '../../src/store/datastore/store';
import { MemoryStore } from '../../src/store/memory/store';
import type { Store, TaskRequest } from '../../src/types';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { RecordingQueue } from '../support/recording-queue';
import { MemoryLogger, testAuth, TEST_TOKEN } from '../support/task-app';

const stores: Array<[string, () => { store: Store; namespace: string | undefined }]> = [
  ['memory store', () => ({ store: new MemoryStore({ projectId: 'shop' }), namespace: undefined })],
  ['Datastore emulator', () => {
    const namespace = uniqueNamespace('binding');
    return { store: new DatastoreStore(legacyDatastore(), { namespaces: [namespace] }), namespace };
  }],
];

for (const [name, make] of stores) {
  describe(`a task is bound to its step's route and body (${name})`, () => {
    async function fixture() {
      const { store, namespace } = make();
      const queue = new RecordingQueue();
      const logger = new MemoryLogger();
      const locker = new Locker({ store, queue, authenticate: testAuth, logger });
      const runs: Array<{ route: string; payload: unknown }> = [];
      const app = express();
      for (const route of ['/charge', '/refund']) {
        app.post(route, locker.handle((ctx) => { runs.push({ route, payload: ctx.payload }); }, (p) => p));
      }
      const key = new Key(namespace ? { namespace, path: ['Order', `o-${Math.random()}`] } : { path: ['Order', 'o-1'] });
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

function lower(task: TaskRequest): Record<string, string> {
  return Object.fromEntries(Object.entries(task.headers).map(([n, v]) => [n.toLowerCase(), v]));
}

async function firstKey(locker: Locker, task: TaskRequest): Promise<Key> {
  return locker.decodeKey(lower(task)['x-lock-key']!);
}
