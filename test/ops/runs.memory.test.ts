// Kickoffs and fan-outs as rows on the in-memory store, and what they cost a step: nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runsSuite, jobRig } from './runs-suite';
import { MemoryStore, type MemoryStoreOperation } from '../../src/store/memory/store';
import { keys } from '../support/task-app';
import { REMOVAL_DELAY_MS } from '../../src/chain/ledger-removals';
import type { LocalQueue } from '../../src/queue/local';

/** The queue idle, and the grouped removal of the last step's ledger record sent (it waits REMOVAL_DELAY_MS). */
async function settled(local: LocalQueue): Promise<void> {
  await local.idle();
  await new Promise((resolve) => setTimeout(resolve, REMOVAL_DELAY_MS * 10));
}

runsSuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }));

describe('lock_run costs a step nothing (in-memory store, every operation counted)', () => {
  it('a chain a kickoff started makes the same store calls per step as one schedule() started, and its entity carries lock_run', async () => {
    let seen: MemoryStoreOperation[] = [];
    const store = new MemoryStore({ fault: (op) => { seen.push(op); return undefined; } });
    const rig = await jobRig(store);
    try {
      const tally = (ops: MemoryStoreOperation[]): string => [...new Set(ops)].sort().map((op) => `${op}:${ops.filter((o) => o === op).length}`).join(' ');
      const plain = keys.key(['Job', 'cost-plain']);
      await rig.locker.schedule(plain, { i: 0 }, '/job', {});
      seen = [];
      await settled(rig.local);
      const byScheduled = tally(seen);
      const bulk = keys.key(['Job', 'cost-bulk']);
      await rig.locker.scheduleMany([{ key: bulk, entity: { i: 0 }, path: '/job', payload: {} }], { kickoffId: 'cost' });
      seen = [];
      await settled(rig.local);
      assert.equal(tally(seen), byScheduled, 'the same operations, as many of each, to run both steps');
      assert.equal((await store.get(bulk))?.lock_run, 'k:cost', 'the kickoff\'s chain carries its run to the end');
      assert.equal((await store.get(plain))?.lock_run, undefined, 'a chain schedule() started has none');
      assert.equal((await store.get(bulk))?.lock_seq, (await store.get(plain))?.lock_seq, 'both chains ran to the same end');
    } finally {
      await rig.close();
    }
  });
});
