// End to end: a 10-step chain through the local dispatcher (real HTTP) against the Datastore
// emulator, with a forged duplicate of step 6 and a handler that throws once at step 3.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { Locker } from '../../src/locker';
import { LocalQueue } from '../../src/queue/local';
import { DatastoreStore } from '../../src/store/datastore/store';
import { Headers, StepState, type Properties } from '../../src/types';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { keys, MemoryLogger } from '../support/task-app';

describe('a 10-step chain, end to end', () => {
  let server: Server;
  let queue: LocalQueue;
  let locker: Locker;
  const effects: number[] = [];
  const logger = new MemoryLogger();
  const store = new DatastoreStore(legacyDatastore());
  const key = keys.key({ namespace: uniqueNamespace('e2e'), path: ['Counter', 'chain-1'] });
  let thrownAt3 = false;
  let forged = false;

  before(async () => {
    const app = express();
    queue = new LocalQueue({ baseUrl: () => `http://127.0.0.1:${(server.address() as AddressInfo).port}`, minBackoffMs: 20, maxBackoffMs: 200, logger });
    locker = new Locker({ store, queue, logger, maxRetries: 5 });
    app.post('/count', locker.handle<{ count: number }>(async (ctx) => {
      if (ctx.seq === 3 && !thrownAt3) {
        thrownAt3 = true;
        throw new Error('transient failure at step 3');
      }
      effects.push(ctx.seq);
      ctx.entity.count = ctx.seq;
      if (ctx.seq === 7 && !forged) {
        forged = true;
        // A forged duplicate of step 6, under another task name, delivered once step 6 finished.
        const headers = { [Headers.key]: locker.encodeKey(ctx.key), [Headers.seq]: '6' };
        await queue.enqueue({ name: 'forged-duplicate-of-6', path: '/count', headers, body: '' });
      }
      if (ctx.seq < 10) await ctx.schedule('/count', { from: ctx.seq });
    }, (props: Properties) => ({ count: typeof props.count === 'number' ? props.count : 0 })));
    await new Promise<void>((resolve) => { server = app.listen(0, '127.0.0.1', () => resolve()); });
  });

  after(async () => {
    await queue.shutdown();
    await locker.shutdown();
    await new Promise((resolve) => server.close(resolve));
  });

  it('records every step\'s side effect exactly once, in order, and ends complete', async () => {
    const dropped: number[] = [];
    locker.on('dropped', (e) => dropped.push(e.seq));
    await locker.schedule(key, { count: 0 }, '/count');
    const deadline = Date.now() + 60_000;
    for (;;) {
      await queue.idle();
      const props = await store.get(key);
      if (props?.lock_state === StepState.complete && dropped.includes(6)) break;
      assert.ok(Date.now() < deadline, `chain did not finish: ${JSON.stringify(props)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(effects, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.equal(thrownAt3, true);
    assert.deepEqual(dropped, [6], 'the forged duplicate of step 6 was dropped');
    const props = await store.get(key);
    assert.equal(props?.lock_seq, 11);
    assert.equal(props?.count, 10);
    assert.equal(queue.stats().givenUp, 0);
  });
});
