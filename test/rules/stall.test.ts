/**
 * The sweep's verdict on a due ledger record, as a table: clear (the step is no longer live), wait
 * (it made progress, or a lease is fresh), or re-deliver (stalled); and how re-deliveries back off.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import type { Lock } from '../../src/rules/lock-fields';
import { FAILED_RECORD_RETENTION_MS, failureInterval, MAX_RESEND_INTERVAL_MS, resendInterval, stallVerdict } from '../../src/rules/stall';
import { StepState, type LedgerRecord } from '../../src/types';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const STALL = 300_000;
const LEASE = 60_000;

const record = (extra: Partial<LedgerRecord> = {}): LedgerRecord => ({
  id: 'abc-3', key: new Key({ path: ['Order', 1] }), seq: 3, chain: 'c1', path: '/p', body: '', createdAt: new Date(T0),
  task: 'abc-3', sends: 1, sentAt: new Date(T0), failures: 0, due: new Date(T0 + STALL), ...extra,
});
const lock = (extra: Partial<Lock> = {}): Lock => ({
  ts: new Date(T0), req: '', seq: 3, tries: 0, state: StepState.scheduled, chain: 'c1', run: undefined, task: 'abc-3', err: undefined, alerts: [], legacy: false, ...extra,
});
const at = (now: number) => ({ now, stallAfter: STALL, leaseDuration: LEASE });

describe('stallVerdict: what the sweep does with a due record', () => {
  const rows: Array<[string, Lock | undefined, LedgerRecord, number, ReturnType<typeof stallVerdict>['action']]> = [
    ['the entity is gone', undefined, record(), T0 + STALL, 'clear'],
    ['the step moved on', lock({ seq: 4 }), record(), T0 + STALL, 'clear'],
    ['the entity is behind the step (a restore of the entity alone)', lock({ seq: 2 }), record(), T0 + STALL, 'clear'],
    ['another chain runs', lock({ chain: 'c2' }), record(), T0 + STALL, 'clear'],
    ['the chain is complete', lock({ seq: 4, state: StepState.complete }), record(), T0 + STALL, 'clear'],
    ['the step failed: its record is kept for a retry', lock({ state: StepState.failed }), record(), T0 + STALL, 'wait'],
    ['the step failed 30 days ago', lock({ state: StepState.failed }), record(), T0 + FAILED_RECORD_RETENTION_MS, 'clear'],
    ['an earlier step of the chain failed', lock({ seq: 4, state: StepState.failed }), record(), T0 + STALL, 'clear'],
    ['the chain was cancelled', lock({ state: StepState.cancelled }), record(), T0 + STALL, 'clear'],
    ['free lease, no progress for stallAfter', lock(), record(), T0 + STALL, 'resend'],
    ['free lease, released a minute ago', lock({ ts: new Date(T0 + STALL - LEASE), tries: 1 }), record(), T0 + STALL, 'wait'],
    ['fresh lease', lock({ req: 'a1', ts: new Date(T0 + STALL - 1) }), record(), T0 + STALL, 'wait'],
    ['stale lease, no progress for stallAfter', lock({ req: 'a1', ts: new Date(T0) }), record(), T0 + STALL, 'resend'],
    ['a re-delivery was just sent', lock(), record({ sends: 2, sentAt: new Date(T0 + STALL - 1) }), T0 + STALL, 'wait'],
    ['scheduled for later: due counts from the schedule time', lock(), record({ scheduleTime: new Date(T0 + STALL) }), T0 + STALL + 1, 'wait'],
    ['a Go-written entity with no chain', lock({ chain: undefined }), record(), T0 + STALL, 'resend'],
  ];
  for (const [situation, l, r, now, action] of rows) {
    it(`${situation}: ${action}`, () => assert.equal(stallVerdict(l, r, at(now)).action, action));
  }

  it('keeps a failed step\'s record until FAILED_RECORD_RETENTION_MS after it failed', () => {
    assert.deepEqual(stallVerdict(lock({ state: StepState.failed }), record(), at(T0 + STALL)), { action: 'wait', due: T0 + FAILED_RECORD_RETENTION_MS });
  });

  it('waits until stallAfter after the last progress', () => {
    const verdict = stallVerdict(lock({ req: 'a1', ts: new Date(T0 + 1000) }), record(), at(T0 + 2000));
    assert.deepEqual(verdict, { action: 'wait', due: T0 + 1000 + STALL });
  });
});

describe('re-delivery backoff', () => {
  it('re-delivers again after stallAfter when the step progressed since the last send, doubling when it did not', () => {
    const progressed = lock({ ts: new Date(T0 + 10) });
    const quiet = lock({ ts: new Date(T0) });
    assert.equal(resendInterval(progressed, record({ sends: 5, sentAt: new Date(T0) }), STALL), STALL);
    assert.equal(resendInterval(quiet, record({ sends: 1 }), STALL), STALL);
    assert.equal(resendInterval(quiet, record({ sends: 2 }), STALL), 2 * STALL);
    assert.equal(resendInterval(quiet, record({ sends: 3 }), STALL), 4 * STALL);
    assert.equal(resendInterval(quiet, record({ sends: 40 }), STALL), MAX_RESEND_INTERVAL_MS, 'at most hourly');
  });

  it('backs off a failed create from stallAfter / 4 (at least 1 s), doubling, at most hourly', () => {
    assert.equal(failureInterval(0, STALL), STALL / 4);
    assert.equal(failureInterval(1, STALL), STALL / 2);
    assert.equal(failureInterval(0, 1500), 1000);
    assert.equal(failureInterval(30, STALL), MAX_RESEND_INTERVAL_MS);
  });
});
