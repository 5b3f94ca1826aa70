// The operator's view of a waiting step, pure: its ledger record tells queued from stalled (a task
// re-sent within stallAfter is a backlog, not a loss), and claims still unmarked count as alerts owed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { viewStep, withLedger, type ViewClock } from '../../src/ops/inspect/step-view';
import type { Properties } from '../../src/types';

const MIN = 60_000;
const NOW = Date.parse('2026-11-28T06:00:00Z');
const clock: ViewClock = { now: NOW, leaseDuration: MIN, stallAfter: 5 * MIN };
const key = new Key({ path: ['Order', 'o'] });
const lock = (extra: Properties = {}): Properties =>
  ({ lock_ts: new Date(NOW - 10 * MIN), lock_req: '', lock_seq: 3, lock_try: 0, lock_state: 'scheduled', lock_chain: 'c', lock_task: 't3', ...extra });
const record = (sentAgoMs: number, extra: Partial<{ seq: number; id: string }> = {}) =>
  ({ id: 't3', seq: 3, sends: 4, sentAt: new Date(NOW - sentAgoMs), due: new Date(NOW + MIN), ...extra });

describe('a waiting step and its ledger record', () => {
  it('is queued, not stalled, when its last task was sent within stallAfter', () => {
    const view = withLedger(viewStep(key, lock(), clock, 'enc'), record(MIN), clock);
    assert.equal(view.state, 'scheduled');
    assert.equal(view.stalled, false);
    assert.deepEqual(view.queued && { sends: view.queued.sends, sentAgeMs: view.queued.sentAgeMs }, { sends: 4, sentAgeMs: MIN });
  });

  it('is stalled when its last send is as old as stallAfter, or it has no record', () => {
    const old = withLedger(viewStep(key, lock(), clock, 'enc'), record(5 * MIN), clock);
    assert.equal(old.state, 'stalled');
    assert.equal(old.queued?.sends, 4, 'still shows its sends');
    assert.equal(withLedger(viewStep(key, lock(), clock, 'enc'), undefined, clock).state, 'stalled');
  });

  it('ignores a record of another step (another seq or id)', () => {
    assert.equal(withLedger(viewStep(key, lock(), clock, 'enc'), record(MIN, { seq: 2 }), clock).state, 'stalled');
    assert.equal(withLedger(viewStep(key, lock(), clock, 'enc'), record(MIN, { id: 't2' }), clock).queued, undefined);
  });

  it('keeps a stale lease stale when its task was re-sent recently', () => {
    const view = withLedger(viewStep(key, lock({ lock_req: 'dead' }), clock, 'enc'), record(MIN), clock);
    assert.equal(view.state, 'stale');
    assert.equal(view.stalled, false);
  });

  it('leaves failed and complete steps as they are', () => {
    const failed = viewStep(key, lock({ lock_state: 'failed' }), clock, 'enc');
    assert.equal(withLedger(failed, record(MIN), clock), failed);
  });
});

describe('alerts owed', () => {
  it('counts claims not marked sent: overwrites, this step\'s failure, failures carried', () => {
    assert.equal(viewStep(key, lock(), clock, 'enc').alertsOwed, 0);
    assert.equal(viewStep(key, lock({ lock_alerts: ['overwrite:3:a:b', 'overwrite:2:x:y:sent'] }), clock, 'enc').alertsOwed, 1);
    assert.equal(viewStep(key, lock({ lock_state: 'failed', lock_alerts: ['failure:3:att'] }), clock, 'enc').alertsOwed, 1);
    assert.equal(viewStep(key, lock({ lock_state: 'failed', lock_alerts: ['failure:3:att:sent'] }), clock, 'enc').alertsOwed, 0);
    assert.equal(viewStep(key, lock({ lock_alerts: ['failure:1:old', 'overwrite:3:a:b'] }), clock, 'enc').alertsOwed, 2, 'a failure carried from step 1');
  });
});
