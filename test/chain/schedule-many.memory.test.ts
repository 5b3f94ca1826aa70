// locker.scheduleMany() on the in-memory store, and its details that need no emulator.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { scheduleManySuite } from './schedule-many-suite';
import { MemoryStore } from '../../src/store/memory/store';
import { Locker } from '../../src/locker';
import { StoreRejectedError } from '../../src/errors/errors';
import type { Queue, Store } from '../../src/types';
import type { KickoffItem } from '../../src/chain/schedule-many-types';
import { RecordingQueue } from '../support/recording-queue';
import { keys, MemoryLogger } from '../support/task-app';
import { scaled } from '../support/test-scale';

scheduleManySuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }), { chains: scaled(500, 2_000) });

describe('locker.scheduleMany() details (in-memory store)', () => {
  const key = (name: string) => keys.key(['Invoice', name]);

  it('works on a store without readMany/replaceMany: one transaction per item, same answers', async () => {
    const inner = new MemoryStore();
    const plain: Store = {
      transaction: (fn) => inner.transaction(fn), get: (k) => inner.get(k), read: (k) => inner.read(k),
      replaceIfUnchanged: (k, s, p, e) => inner.replaceIfUnchanged(k, s, p, e), listDue: (n, l) => inner.listDue(n, l),
    };
    await inner.transaction(async (tx) => { tx.put(key('plain-busy'), { lock_seq: 1, lock_state: 'scheduled', lock_req: '', lock_try: 0, lock_chain: 'x' }, []); });
    const queue = new RecordingQueue();
    const locker = new Locker({ store: plain, queue, authenticate: false });
    const items: KickoffItem[] = [
      ...Array.from({ length: 20 }, (_, i) => ({ key: key(`plain-${i}`), entity: { i }, path: '/step' })),
      { key: key('plain-busy'), entity: {}, path: '/step' },
      { key: key('plain-refused'), entity: { n: 1n }, path: '/step' },
      { key: key('plain-bad-path'), entity: {}, path: 'no slash' },
    ];
    const first = await locker.scheduleMany(items, { kickoffId: 'plain' });
    assert.deepEqual([first.started, first.busy, first.failed], [20, 1, 2]);
    assert.ok(first.results[21]!.status === 'failed' && first.results[21]!.error instanceof StoreRejectedError);
    assert.ok(first.results[22]!.status === 'failed' && first.results[22]!.error instanceof TypeError);
    assert.equal(queue.tasks.length, 20);
    const again = await locker.scheduleMany(items, { kickoffId: 'plain' });
    assert.equal(again.results.filter((r) => r.status === 'started' && r.resumed).length, 20, 'the second call recognised its chains');
    assert.equal(queue.tasks.length, 20, 'and started none again');
  });

  it('creates at most `concurrency` tasks at once across batches, and a throwing onProgress changes nothing', async () => {
    let inFlight = 0;
    let most = 0;
    const queue: Queue = {
      async enqueue() {
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight--;
      },
    };
    const logger = new MemoryLogger();
    const locker = new Locker({ store: new MemoryStore(), queue, authenticate: false, logger });
    const items = Array.from({ length: 400 }, (_, i) => ({ key: key(`limit-${i}`), entity: { i }, path: '/step' }));
    const result = await locker.scheduleMany(items, { concurrency: 5, onProgress: () => { throw new Error('listener bug'); } });
    assert.equal(result.started, 400);
    assert.ok(result.results.every((r) => r.status === 'started' && r.sent));
    assert.equal(most, 5, 'five tasks were created at once, never more');
    assert.ok(logger.lines.some((l) => l.message.includes('onProgress listener threw')), 'the listener\'s error was logged');
  });

  it('refuses an unknown option and a bad kickoffId before writing anything', async () => {
    const store = new MemoryStore();
    const locker = new Locker({ store, queue: new RecordingQueue(), authenticate: false });
    const items = [{ key: key('opt'), entity: {}, path: '/step' }];
    await assert.rejects(locker.scheduleMany(items, { kickofId: 'typo' } as never), /kickofId/);
    await assert.rejects(locker.scheduleMany(items, { kickoffId: '' }), TypeError);
    assert.equal(await store.get(key('opt')), undefined);
  });
});
