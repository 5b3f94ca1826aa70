/**
 * The example's /status.json lists every chain whatever state its step is in, also while the step
 * is in a state that lasts only a while: a lease left stale by a killed process (before it
 * stalls), a free lease waiting (before it stalls), and each after it stalled. In process, on the
 * in-memory store, with the Locker's clock fixed, so every window is hit exactly.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Datastore } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { MemoryStore } from '../../src/store/memory/store';
import { StepState, type Properties } from '../../src/types';
import { readStatus } from '../../example-app/status';
import { Records } from '../../example-app/records';

const LEASE = 1_000;
const STALL_AFTER = 1_500;
const NOW = Date.parse('2026-11-22T12:00:00Z');
const silent = { info() {}, warn() {}, error() {} };

describe('example app: /status.json lists a chain in every state its step can be in', () => {
  const cases: Array<[string, Partial<Properties>, string]> = [
    ['a free lease waiting', { lock_req: '', lock_ts: new Date(NOW - 100) }, 'scheduled'],
    ['a fresh lease', { lock_req: 'attempt-1', lock_ts: new Date(NOW - 100) }, 'running'],
    ['a lease left stale by a killed process, not yet stalled', { lock_req: 'attempt-1', lock_ts: new Date(NOW - (LEASE + STALL_AFTER) / 2) }, 'stale'],
    ['a stale lease that stalled', { lock_req: 'attempt-1', lock_ts: new Date(NOW - STALL_AFTER - 1) }, 'stalled'],
    ['a free lease that stalled', { lock_req: '', lock_ts: new Date(NOW - STALL_AFTER - 1) }, 'stalled'],
    ['a failed step', { lock_state: StepState.failed, lock_err: 'boom' }, 'failed'],
    ['a finished chain', { lock_state: StepState.complete, lock_seq: 11 }, 'complete'],
  ];
  for (const [what, lock, state] of cases) {
    it(`${what}: listed as ${state}`, async () => {
      const store = new MemoryStore({ projectId: 'example-status' });
      const locker = new Locker({ store, authenticate: false, logger: silent, clock: () => NOW, leaseDuration: LEASE, stallAfter: STALL_AFTER });
      const keys = new Datastore({ projectId: 'example-status' });
      const records = new Records(store, keys, 'status-test');
      const key = records.chainKey({ kind: 'Counter', name: 'counter-1' });
      const props: Properties = { count: 3, lock_ts: new Date(NOW - 100), lock_req: '', lock_seq: 4, lock_try: 0, lock_state: StepState.scheduled, lock_chain: 'c1', ...lock };
      await store.transaction(async (tx) => tx.put(key, props, []));
      try {
        const { chains } = await readStatus(locker, records);
        assert.deepEqual(chains.map((c) => [c.key, c.state]), [['Counter:"counter-1"', state]]);
      } finally {
        await locker.shutdown();
      }
    });
  }
});
