import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { afterFailure, decide, DropReason, holds, type Situation } from '../../src/rules/decision';
import type { Lock } from '../../src/rules/lock-fields';
import { StepState } from '../../src/types';

const NOW = 1_700_000_000_000;
const LEASE = 60_000;

function lock(over: Partial<Lock> = {}): Lock {
  return { ts: new Date(NOW - 1_000), req: '', seq: 3, tries: 0, state: StepState.scheduled, chain: 'c1', run: undefined, task: 't', err: undefined, alerts: [], legacy: false, ...over };
}
function arrival(over: Partial<Situation> = {}): Situation {
  return { lock: lock(), seq: 3, attempt: 'me', now: NOW, leaseDurationMs: LEASE, maxRetries: 10, ...over };
}

describe('decide(): one row of the lease table each', () => {
  it('drops a task for an entity that does not exist', () => {
    assert.deepEqual(decide(arrival({ lock: undefined })), { action: 'drop', reason: DropReason.missing });
  });
  it('drops a duplicate of a finished step (lock_seq > seq)', () => {
    assert.deepEqual(decide(arrival({ lock: lock({ seq: 4 }) })), { action: 'drop', reason: DropReason.finished });
  });
  it('drops a step that was never scheduled (lock_seq < seq)', () => {
    assert.deepEqual(decide(arrival({ lock: lock({ seq: 2 }) })), { action: 'drop', reason: DropReason.unscheduled });
  });
  it('drops a step that failed for good', () => {
    assert.deepEqual(decide(arrival({ lock: lock({ state: StepState.failed }) })), { action: 'drop', reason: DropReason.failed });
  });
  it('drops a task whose sequence matches a complete chain (nothing was scheduled there)', () => {
    assert.deepEqual(decide(arrival({ lock: lock({ state: StepState.complete }) })), { action: 'drop', reason: DropReason.unscheduled });
  });
  it('drops a task of a cancelled chain', () => {
    assert.deepEqual(decide(arrival({ lock: lock({ state: StepState.cancelled, req: '' }) })), { action: 'drop', reason: DropReason.cancelled });
  });
  it("judges a lease the Go library holds by Go's lease timeout, not leaseDuration (Go never renews)", () => {
    const go = lock({ req: 'go-request', legacy: true, chain: undefined, ts: new Date(NOW - 5 * LEASE) });
    assert.deepEqual(decide(arrival({ lock: go, chain: undefined, goLeaseTimeoutMs: 630_000 })), {
      action: 'refuse', holder: 'go-request', retryAfterMs: 630_000 - 5 * LEASE,
    });
    const older = { ...go, ts: new Date(NOW - 630_000) };
    assert.deepEqual(decide(arrival({ lock: older, chain: undefined, goLeaseTimeoutMs: 630_000 })), {
      action: 'overwrite', previous: 'go-request', leaseAgeMs: 630_000,
    });
  });
  it('drops a task of an earlier chain of the same entity', () => {
    assert.deepEqual(decide(arrival({ chain: 'old' })), { action: 'drop', reason: DropReason.otherChain });
  });
  it('accepts tasks that carry no chain (the Go library sends none)', () => {
    assert.deepEqual(decide(arrival({ chain: undefined })), { action: 'acquire' });
  });
  it('acquires a free lease', () => {
    assert.deepEqual(decide(arrival()), { action: 'acquire' });
  });
  it('re-acquires a lease this very attempt already holds (a retried transaction)', () => {
    assert.deepEqual(decide(arrival({ lock: lock({ req: 'me' }) })), { action: 'acquire' });
  });
  it('refuses while another attempt holds a fresh lease, hinting when it goes stale', () => {
    assert.deepEqual(decide(arrival({ lock: lock({ req: 'other', ts: new Date(NOW - 10_000) }) })), {
      action: 'refuse', holder: 'other', retryAfterMs: 50_000,
    });
  });
  it('overwrites a stale lease (not renewed for leaseDuration)', () => {
    assert.deepEqual(decide(arrival({ lock: lock({ req: 'other', ts: new Date(NOW - LEASE) }) })), {
      action: 'overwrite', previous: 'other', leaseAgeMs: LEASE,
    });
  });
  it('fails the step when the stale lease was its last allowed attempt', () => {
    assert.deepEqual(decide(arrival({ lock: lock({ req: 'other', tries: 9, ts: new Date(NOW - LEASE - 1) }) })), {
      action: 'expire', previous: 'other', leaseAgeMs: LEASE + 1,
    });
  });
  it('treats a Go entity without lock_state as scheduled', () => {
    assert.deepEqual(decide(arrival({ lock: lock({ state: undefined, chain: undefined }) })), { action: 'drop', reason: DropReason.unscheduled });
  });
});

describe('afterFailure()', () => {
  it('releases for a retry while attempts remain', () => {
    assert.equal(afterFailure(lock({ tries: 0 }), 3, false), 'release');
    assert.equal(afterFailure(lock({ tries: 1 }), 3, false), 'release');
  });
  it('fails the step when lock_try reaches maxRetries', () => {
    assert.equal(afterFailure(lock({ tries: 2 }), 3, false), 'fail');
  });
  it('fails at once on a permanent error', () => {
    assert.equal(afterFailure(lock({ tries: 0 }), 3, true), 'fail');
  });
});

describe('holds(): the fencing rule', () => {
  it('holds only with the same attempt, the same step and a scheduled state', () => {
    assert.equal(holds(lock({ req: 'me' }), 'me', 3), true);
    assert.equal(holds(lock({ req: 'other' }), 'me', 3), false);
    assert.equal(holds(lock({ req: 'me', seq: 4 }), 'me', 3), false);
    assert.equal(holds(lock({ req: 'me', state: StepState.failed }), 'me', 3), false);
    assert.equal(holds(undefined, 'me', 3), false);
  });
});

// ----- invariants, over arbitrary stored locks and arrivals

const arbState = fc.constantFrom<StepState | undefined>(StepState.scheduled, StepState.complete, StepState.failed, StepState.cancelled, undefined);
const arbLock: fc.Arbitrary<Lock> = fc.record({
  ts: fc.option(fc.integer({ min: NOW - 10 * LEASE, max: NOW + LEASE }).map((t) => new Date(t)), { nil: undefined }),
  req: fc.constantFrom('', 'me', 'other', 'third'),
  seq: fc.integer({ min: 0, max: 6 }),
  tries: fc.integer({ min: 0, max: 12 }),
  state: arbState,
  chain: fc.constantFrom<string | undefined>('c1', 'c2', undefined),
  run: fc.constant(undefined),
  task: fc.constant(undefined),
  err: fc.constant(undefined),
  alerts: fc.constant([]),
  legacy: fc.boolean(),
});
const arbSituation: fc.Arbitrary<Situation> = fc.record({
  lock: fc.option(arbLock, { nil: undefined }),
  seq: fc.integer({ min: 1, max: 6 }),
  chain: fc.constantFrom<string | undefined>('c1', 'c2', undefined),
  attempt: fc.constantFrom('me', 'new'),
  now: fc.constant(NOW),
  leaseDurationMs: fc.constantFrom(1_000, LEASE),
  goLeaseTimeoutMs: fc.constantFrom(1_000, 630_000),
  maxRetries: fc.integer({ min: 1, max: 10 }),
});
/** How long the stored lease lasts: Go's lease timeout for a lock the Go library holds. */
const lasts = (a: Situation): number => (a.lock?.legacy ? (a.goLeaseTimeoutMs ?? a.leaseDurationMs) : a.leaseDurationMs);
const runs = (d: ReturnType<typeof decide>): boolean => d.action === 'acquire' || d.action === 'overwrite';

describe('decide(): invariants (property-based)', () => {
  it('never runs a step whose sequence does not match the stored one', () => {
    fc.assert(fc.property(arbSituation, (a) => !runs(decide(a)) || a.lock?.seq === a.seq));
  });
  it('never takes a fresh lease held by another attempt', () => {
    fc.assert(fc.property(arbSituation, (a) => {
      const l = a.lock;
      const fresh = l !== undefined && l.req !== '' && l.req !== a.attempt && l.ts !== undefined && a.now - l.ts.getTime() < lasts(a);
      return !fresh || !runs(decide(a));
    }));
  });
  it('takes a lease held by another attempt only by overwrite, and only when stale', () => {
    fc.assert(fc.property(arbSituation, (a) => {
      const d = decide(a);
      const l = a.lock;
      if (!l || l.req === '' || l.req === a.attempt || !runs(d)) return true;
      const stale = l.ts === undefined || a.now - l.ts.getTime() >= lasts(a);
      return d.action === 'overwrite' && d.previous === l.req && stale;
    }));
  });
  it('never runs a failed or complete step again', () => {
    fc.assert(fc.property(arbSituation, (a) => !(a.lock && a.lock.state !== StepState.scheduled && a.lock.seq > 0) || !runs(decide(a))));
  });
  it('never runs a task of another chain', () => {
    fc.assert(fc.property(arbSituation, (a) => {
      const other = a.chain !== undefined && a.lock?.chain !== undefined && a.chain !== a.lock.chain;
      return !other || !runs(decide(a));
    }));
  });
  it('an overwrite never lets the step exceed maxRetries attempts', () => {
    fc.assert(fc.property(arbSituation, (a) => {
      const d = decide(a);
      return d.action !== 'overwrite' || (a.lock !== undefined && a.lock.tries + 1 < a.maxRetries);
    }));
  });
});
