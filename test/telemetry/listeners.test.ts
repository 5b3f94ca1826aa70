// Listeners (`locker.on(...)`) are user code: one that throws or rejects is logged and ignored.
// It never changes an answer or a stored state and never crashes the process, also when the event
// is emitted from a timer (a renewal that finds the lease taken, the leaseTimeout clock).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { taskApp, keys } from '../support/task-app';
import { MemoryStore } from '../../src/store/memory/store';
import { StepState, type Properties } from '../../src/types';
import { aborted } from '../support/aborted';

const store = new MemoryStore();
let n = 0;
const newKey = (): Key => keys.key(['Counter', `l${++n}`]);
const seed = (key: Key, over: Properties = {}) => store.transaction(async (tx) => {
  tx.put(key, { count: 1, lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled, lock_chain: 'c1', ...over }, []);
});

describe('listeners are isolated', () => {
  const uncaught: unknown[] = [];
  const unhandled: unknown[] = [];
  const onUncaught = (e: unknown): void => { uncaught.push(e); };
  const onUnhandled = (e: unknown): void => { unhandled.push(e); };
  before(() => {
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUnhandled);
  });
  after(() => {
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUnhandled);
  });

  it('a listener that throws changes neither the answer nor the stored state; the others still hear the event', async () => {
    const t = taskApp(store);
    const heard: string[] = [];
    t.locker.on('acquired', () => { throw new Error('listener bug'); });
    t.locker.on('acquired', () => { heard.push('acquired'); });
    t.locker.on('completed', () => { throw new Error('listener bug'); });
    const key = newKey();
    await seed(key);
    t.behave((ctx) => { ctx.entity.count = 2; });
    const res = await t.send(key, 1);
    assert.equal(res.status, 200);
    assert.deepEqual(heard, ['acquired']);
    const after = await store.get(key);
    assert.deepEqual([after?.lock_state, after?.count, after?.lock_req], [StepState.complete, 2, '']);
    const lines = t.logger.lines.filter((l) => l.message.startsWith('a listener of the'));
    assert.deepEqual(lines.map((l) => [l.level, l.message]), [
      ['error', 'a listener of the "acquired" event failed; ignored'],
      ['error', 'a listener of the "completed" event failed; ignored'],
    ]);
    assert.match(String(lines[0]!.fields?.error), /listener bug/);
  });

  it('an async listener that rejects is logged, not an unhandled rejection', async () => {
    const t = taskApp(store);
    t.locker.on('completed', async () => { throw new Error('async listener bug'); });
    const listening = t.locker.listenerCount('dropped');
    t.locker.once('dropped', () => Promise.reject(new Error('once, rejecting')));
    const key = newKey();
    await seed(key);
    assert.equal((await t.send(key, 1)).status, 200);
    assert.equal((await t.send(key, 1)).status, 200, 'a duplicate, dropped');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(unhandled, []);
    assert.ok(t.logger.has('a listener of the "completed" event failed'));
    assert.ok(t.logger.has('a listener of the "dropped" event failed'));
    assert.equal(t.locker.listenerCount('dropped'), listening, 'a once listener is still removed');
  });

  it('a throwing listener of an event a timer emits (a renewal finds the lease taken) does not crash the process', async () => {
    const t = taskApp(store, { leaseDuration: 300, leaseTimeout: 60_000 });
    t.locker.on('lost', () => { throw new Error('lost listener bug'); });
    t.locker.on('timedOut', () => { throw new Error('timedOut listener bug'); });
    const key = newKey();
    await seed(key);
    t.behave(async (ctx) => {
      const current = (await store.get(ctx.key))!;
      await seed(ctx.key, { ...current, lock_req: 'thief', lock_ts: new Date() });
      await aborted(ctx.signal);
    });
    assert.equal((await t.send(key, 1)).status, 503);
    assert.equal((await store.get(key))?.lock_req, 'thief', 'nothing was written for the lost attempt');
    assert.ok(t.logger.has('a listener of the "lost" event failed'));

    const slow = taskApp(store, { leaseDuration: 1_500, leaseTimeout: 1_500 });
    slow.locker.on('timedOut', async () => { throw new Error('timedOut listener bug'); });
    const other = newKey();
    await seed(other);
    slow.behave(async (ctx) => {
      await aborted(ctx.signal);
    });
    assert.equal((await slow.send(other, 1)).status, 200);
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(slow.logger.has('a listener of the "timedOut" event failed'));
    assert.deepEqual(uncaught, []);
    assert.deepEqual(unhandled, []);
  });
});
