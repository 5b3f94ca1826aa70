// locker.inspect().counts(): the overview's numbers per kind and namespace, each a count from the
// store, on the in-memory store (a counting wrapper, test/support/counting-store.ts, sees each
// call). Their number is five per kind and namespace, the same at 1,000 chains and at 20,000, and
// they are all in flight at once; a run's counts keep to its chains; past the cap a count says so.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import { MemoryStore } from '../../src/store/memory/store';
import { StepState, type Properties } from '../../src/types';
import { countingStore, type CountingStore } from '../support/counting-store';

const NOW = Date.parse('2032-03-04T05:06:07.000Z');
const MIN = 60_000;
const KINDS = ['Order', 'Line'];
const NAMESPACES = ['', 'eu'];

/** Chain `i`: kind and namespace by `i % 4`; of each four, one in 10 failed, one in 5 live (half of those idle past stallAfter), one in 20 cancelled, the rest complete; half of them of run "k-1". */
function lockOf(i: number): Properties {
  const j = Math.floor(i / 4);
  const state = j % 10 === 0 ? StepState.failed : j % 5 === 1 ? StepState.scheduled : j % 20 === 3 ? StepState.cancelled : StepState.complete;
  const age = state === StepState.scheduled && j % 10 === 1 ? 6 * MIN : 30_000;
  return { lock_ts: new Date(NOW - age), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: state, lock_chain: `c${i}`, ...(j % 2 === 0 ? { lock_run: 'k-1' } : {}) };
}

async function seeded(chains: number): Promise<{ counted: CountingStore; locker: Locker }> {
  const store = new MemoryStore({ projectId: 'shop' });
  await store.transaction(async (tx) => {
    for (let i = 0; i < chains; i++) {
      const kind = KINDS[i % 2]!;
      const namespace = NAMESPACES[Math.floor(i / 2) % 2]!;
      tx.put(new Key({ namespace: namespace || undefined, path: [kind, `e${i}`] }), lockOf(i), UNINDEXED_LOCK_FIELDS);
    }
  });
  const counted = countingStore(store);
  return { counted, locker: new Locker({ store: counted.store, authenticate: false, clock: () => NOW, leaseDuration: MIN, stallAfter: 5 * MIN }) };
}

/** What a scan of chains 0..n-1 counts for one kind and namespace. */
function expected(chains: number, kind: string, namespace: string, run?: string) {
  const tally = { failed: 0, live: 0, waitingLong: 0, complete: 0, cancelled: 0 };
  for (let i = 0; i < chains; i++) {
    if (KINDS[i % 2] !== kind || NAMESPACES[Math.floor(i / 2) % 2] !== namespace) continue;
    const lock = lockOf(i);
    if (run !== undefined && lock.lock_run !== run) continue;
    if (lock.lock_state === StepState.failed) tally.failed += 1;
    if (lock.lock_state === StepState.complete) tally.complete += 1;
    if (lock.lock_state === StepState.cancelled) tally.cancelled += 1;
    if (lock.lock_state === StepState.scheduled) {
      tally.live += 1;
      if ((lock.lock_ts as Date).getTime() <= NOW - 5 * MIN) tally.waitingLong += 1;
    }
  }
  return tally;
}

const numbers = (row: { failed: { count: number }; live: { count: number }; waitingLong: { count: number }; complete: { count: number }; cancelled: { count: number } }) =>
  ({ failed: row.failed.count, live: row.live.count, waitingLong: row.waitingLong.count, complete: row.complete.count, cancelled: row.cancelled.count });

describe('locker.inspect().counts()', () => {
  it('counts each kind and namespace as a scan would, with five store calls each, all at once, the same at 1,000 and 20,000 chains', async () => {
    const seen: Array<{ calls: number; most: number }> = [];
    for (const chains of [1_000, 20_000]) {
      const { counted, locker } = await seeded(chains);
      counted.reset();
      const rows = await locker.inspect().counts({ kinds: KINDS, namespaces: NAMESPACES, cap: 100_000 });
      assert.deepEqual(rows.map((r) => [r.kind, r.namespace]), KINDS.flatMap((k) => NAMESPACES.map((n) => [k, n])));
      for (const row of rows) {
        assert.deepEqual(numbers(row), expected(chains, row.kind, row.namespace), `${chains} chains, ${row.kind} in "${row.namespace}"`);
        assert.ok([row.failed, row.live, row.waitingLong, row.complete, row.cancelled].every((c) => c.exact));
      }
      assert.deepEqual([...counted.byMethod], [['countLocks', KINDS.length * NAMESPACES.length * 5]], 'counts only, no list, no read');
      seen.push({ calls: counted.calls, most: counted.most });
    }
    assert.deepEqual(seen[1], seen[0], 'the same calls at both sizes');
    assert.equal(seen[0]!.most, seen[0]!.calls, 'every count in flight at once');
  });

  it('keeps to one run\'s chains when asked', async () => {
    const { locker } = await seeded(2_000);
    const rows = await locker.inspect().counts({ kinds: ['Order'], namespaces: [''], run: 'k-1' });
    assert.deepEqual(numbers(rows[0]!), expected(2_000, 'Order', '', 'k-1'));
    assert.ok(rows[0]!.complete.count > 0 && rows[0]!.complete.count < expected(2_000, 'Order', '').complete);
  });

  it('says "at least" past the cap', async () => {
    const { locker } = await seeded(2_000);
    const [row] = await locker.inspect().counts({ kinds: ['Order'], namespaces: [''], cap: 100 });
    const all = expected(2_000, 'Order', '');
    assert.ok(all.complete > 100);
    assert.deepEqual(row!.complete, { count: 100, exact: false });
    assert.deepEqual(row!.failed, { count: Math.min(all.failed, 100), exact: all.failed <= 100 });
  });
});
