// A failure's alert is sent at least once: the failing write claims it, the process sends it and
// marks the claim sent, and a claim still unmarked later (the alerter failed, or the process died
// between its write and its send, which leaves the entity the same way) is sent again by the sweep,
// under the same id. On the Datastore emulator, with a manual clock.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import { StepState, type AlertEvent } from '../../src/types';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { KeptTasks } from '../support/kept-tasks';
import { Counter, taskApp } from '../support/task-app';

const SEC = 1_000;
const START = Date.parse('2031-07-08T09:10:11.000Z');

describe('failure alerts: sent at least once, the sweep sends again one never marked sent', () => {
  const datastore = legacyDatastore();
  const store = new DatastoreStore(datastore);

  /** A Locker whose alerter fails its first `failures` sends; the step at `key` is kicked off and fails for good. */
  async function failedStep(failures: number, failAfterMs = 0, stallAfter = 20 * SEC) {
    const namespace = uniqueNamespace('failure-alert');
    let now = START;
    const received: AlertEvent[] = [];
    let calls = 0;
    // this test's namespace only: the sweep sees no other test's records
    const t = taskApp(new DatastoreStore(datastore, { namespaces: [namespace] }), {
      queue: new KeptTasks(), clock: () => now, leaseDuration: 10 * SEC, stallAfter, maxRetries: 1, alertTimeout: 2 * SEC,
      alerter: (event) => {
        calls += 1;
        if (calls <= failures) throw new Error('the mail server is down');
        received.push(event);
      },
    });
    const key = new Key({ namespace, path: ['Order', 'o1'] });
    await t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
    now += failAfterMs;
    t.behave(() => { throw new Error('card declined'); });
    const answer = await t.send(key, 1);
    assert.equal(answer.status, 200, answer.text);
    const stored = (await store.get(key))!;
    assert.equal(stored.lock_state, StepState.failed);
    return { t, key, received, calls: () => calls, stored, advance: (ms: number) => { now += ms; } };
  }

  it('marks the claim sent once the alerter took the alert; the sweep sends nothing more', async () => {
    const s = await failedStep(0);
    const attempt = s.t.runs[0]!.attempt;
    assert.deepEqual(s.stored.lock_alerts, [`failure:1:${attempt}:sent`]);
    assert.equal(s.received.length, 1);
    s.advance(25 * SEC);
    const swept = await s.t.locker.sweep();
    assert.equal(swept.alerted, 0);
    assert.equal(s.received.length, 1);
    await s.t.locker.shutdown();
  });

  it('sends again, once its grace passed, an alert the alerter failed to take, with the same id, and marks it', async () => {
    const s = await failedStep(1);
    const attempt = s.t.runs[0]!.attempt;
    assert.deepEqual(s.stored.lock_alerts, [`failure:1:${attempt}`], 'claimed, not marked sent');
    assert.equal(s.received.length, 0);
    assert.ok(s.t.logger.has('alert could not be sent'));

    s.advance(2 * SEC); // the record is not due yet: nothing happens
    assert.equal((await s.t.locker.sweep()).alerted, 0);
    s.advance(19 * SEC); // due, and past the grace (2 × alertTimeout)
    const swept = await s.t.locker.sweep();
    assert.equal(swept.alerted, 1);
    assert.equal(s.received.length, 1);
    const again = s.received[0]!;
    assert.equal(again.reason, 'failure');
    assert.equal(again.seq, 1);
    assert.equal(again.previousAttempt, attempt);
    assert.match(again.error?.message ?? '', /card declined/);
    assert.ok(s.t.logger.has('failure alert sent again'));
    assert.deepEqual((await store.get(s.key))!.lock_alerts, [`failure:1:${attempt}:sent`]);
    assert.equal((await store.get(s.key))!.lock_ts?.valueOf(), s.stored.lock_ts?.valueOf(), 'marking it sent keeps the lock\'s time');

    s.advance(60 * SEC);
    assert.equal((await s.t.locker.sweep()).alerted, 0, 'sent once by the sweep, not at every sweep');
    assert.equal(s.received.length, 1);
    await s.t.locker.shutdown();
  });

  it('gives the alert sent again the id of the one that failed', async () => {
    const ids: string[] = [];
    const s = await failedStep(1);
    s.advance(21 * SEC);
    await s.t.locker.sweep();
    ids.push(s.received[0]!.id);
    const first = await failedStep(0);
    assert.notEqual(first.received[0]!.id, ids[0], 'another step, another id');
    const { alertId } = await import('../../src/alert/event');
    assert.equal(ids[0], alertId('failure', s.key, 1, s.t.runs[0]!.attempt));
    await Promise.all([s.t.locker.shutdown(), first.t.locker.shutdown()]);
  });

  it('looks again once the grace passed when the record came due sooner', async () => {
    const s = await failedStep(1, 19_500); // fails 0.5 s before its record is due
    s.advance(1 * SEC); // due, but within the grace (4 s after the failure)
    const early = await s.t.locker.sweep();
    assert.equal(early.alerted, 0);
    assert.equal(early.waiting, 1);
    assert.equal(s.received.length, 0);
    s.advance(3.5 * SEC); // the grace passed: the record was moved to then
    assert.equal((await s.t.locker.sweep()).alerted, 1);
    assert.equal(s.received.length, 1);
    await s.t.locker.shutdown();
  });

  it('brings the record due within the grace when the alert stays owed, however far out its due was', async () => {
    // The record came due an hour after the kickoff (as a re-send's backoff also puts it): the sweep
    // would not look at it for an hour. The failing write leaves the alert owed, so it moves the
    // record to the grace's end, as a finish, a cancel and the seal do.
    const s = await failedStep(1, 0, 3_600 * SEC);
    assert.equal(s.received.length, 0);
    s.advance(1 * SEC); // within the grace: nothing yet
    assert.equal((await s.t.locker.sweep()).alerted, 0);
    s.advance(3.5 * SEC); // the grace (2 × alertTimeout) passed
    assert.equal((await s.t.locker.sweep()).alerted, 1, 'sent by the sweep once the grace passed, not an hour later');
    assert.equal(s.received.length, 1);
    assert.equal(s.received[0]!.reason, 'failure');
    await s.t.locker.shutdown();
  });

  it('does the same when a lease that expired once too often fails the step (the expiry\'s alert owed)', async () => {
    // maxRetries 1: the first lease that lapses ends the step. Its holder hangs (a crashed instance
    // would leave the same lock); the next delivery finds the lease expired and fails the step for
    // good, claiming the failure alert, which the alerter refuses once.
    const namespace = uniqueNamespace('failure-alert-expire');
    let now = START;
    const received: AlertEvent[] = [];
    let calls = 0;
    const t = taskApp(new DatastoreStore(datastore, { namespaces: [namespace] }), {
      queue: new KeptTasks(), clock: () => now, leaseDuration: 10 * SEC, stallAfter: 3_600 * SEC, maxRetries: 1, alertTimeout: 2 * SEC,
      alerter: (event) => {
        calls += 1;
        if (calls === 1) throw new Error('the mail server is down');
        received.push(event);
      },
    });
    const key = new Key({ namespace, path: ['Order', 'o1'] });
    await t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
    let release!: () => void;
    const held = new Promise<void>((resolve) => { release = resolve; });
    t.behave(() => held);
    const hung = t.send(key, 1).then((r) => r);
    for (let i = 0; i < 200 && t.runs.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(t.runs.length, 1, 'the first attempt is running');

    now += 11 * SEC; // its lease lapsed
    const answer = await t.send(key, 1);
    assert.equal(answer.status, 200, answer.text);
    assert.equal((await store.get(key))!.lock_state, StepState.failed);
    assert.equal(calls, 1, 'the expiry\'s failure alert was tried');
    assert.equal(received.length, 0);
    assert.ok(t.logger.has('its lease expired too often'));

    now += 1 * SEC; // within the grace
    assert.equal((await t.locker.sweep()).alerted, 0);
    now += 3.5 * SEC; // past it: the record was brought forward from an hour out
    assert.equal((await t.locker.sweep()).alerted, 1, 'sent by the sweep once the grace passed, not an hour later');
    assert.equal(received.length, 1);
    assert.equal(received[0]!.reason, 'failure');
    release();
    await hung;
    await t.locker.shutdown();
  });
});
