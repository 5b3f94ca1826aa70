/**
 * Oversized bodies, as the README states them: `handle()` answers 400 for a body over
 * `maxBodyBytes` and leaves the store alone; with `express.json()` in front, its own limit answers
 * 413 before the route runs.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { keys, testAuth, TEST_TOKEN, MemoryLogger } from './support/task-app';
import { Locker } from '../src/locker';
import { MemoryStore } from '../src/store/memory';
import { StepState } from '../src/types';
import { ERRORS_REFERENCE_URL } from '../src/errors/errors';

async function oversized(front: express.RequestHandler[]) {
  const store = new MemoryStore();
  const locker = new Locker({ store, authenticate: testAuth, logger: new MemoryLogger() });
  let runs = 0;
  const app = express();
  for (const m of front) app.use(m);
  app.post('/task', locker.handle(() => void (runs += 1), (p) => p, { maxBodyBytes: 1000 }));
  const key = keys.key(['Thing', `big-${front.length}`]);
  const stored = { lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled };
  await store.transaction(async (tx) => tx.put(key, stored, []));
  const before = await store.read(key);
  const res = await request(app).post('/task').set('x-test-auth', TEST_TOKEN).set('x-lock-key', locker.encodeKey(key)).set('x-lock-seq', '1')
    .set('content-type', 'application/json').send(JSON.stringify({ text: 'x'.repeat(2000) }));
  const after = await store.read(key);
  return { res, runs, unchanged: JSON.stringify(after?.properties) === JSON.stringify(before?.properties) };
}

describe('oversized bodies', () => {
  it('handle() answers 400 for a body over maxBodyBytes, without running the handler or writing', async () => {
    const { res, runs, unchanged } = await oversized([]);
    assert.equal(res.status, 400);
    assert.equal(res.text, `the body is larger than 1000 bytes (${ERRORS_REFERENCE_URL}#badrequesterror)`);
    assert.equal(runs, 0);
    assert.ok(unchanged);
  });

  it("express.json() in front answers 413 by its own limit before the route runs", async () => {
    const { res, runs, unchanged } = await oversized([express.json({ limit: 1000 })]);
    assert.equal(res.status, 413);
    assert.equal(runs, 0);
    assert.ok(unchanged);
  });
});
