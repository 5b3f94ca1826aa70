// A schedule record's transitions, row by row, without a store (src/recurring/transitions.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { declare } from '../../src/recurring/declaration';
import { declared, planTick, removed, settled, runNow, resumed, paused, DECLARED_REFRESH_MS, NOW_RUNS_KEPT, type RunPlace } from '../../src/recurring/transitions';
import { readSchedule, scheduleProperties, dueOf, type ScheduleRecord } from '../../src/recurring/schedule-record';
import { cronTimes } from '../../src/recurring/cron-times';

const at = (iso: string): Date => new Date(iso);
const hourly = declare('hourly', { cron: '0 * * * *', path: '/run' });
const place: RunPlace = () => ({ key: 'LockerRecurringRun:"hourly"', namespace: '' });
const fresh = (): ScheduleRecord => declared(undefined, hourly, at('2026-01-05T09:30:00Z'))!;

describe('declared()', () => {
  it('makes a new record due at the next tick, and writes nothing for the same declaration', () => {
    const r = fresh();
    assert.equal(r.next?.toISOString(), '2026-01-05T10:00:00.000Z');
    assert.equal(dueOf(r)?.toISOString(), '2026-01-05T10:00:00.000Z');
    assert.equal(declared(r, hourly, at('2026-01-05T09:40:00Z')), undefined);
    assert.equal(declared(r, hourly, new Date(r.declaredAt.getTime() + DECLARED_REFRESH_MS))?.declaredAt.getTime(), r.declaredAt.getTime() + DECLARED_REFRESH_MS, 'refreshed once an hour');
  });

  it('a changed expression moves the next tick; a changed path keeps it', () => {
    const r = fresh();
    const daily = declare('hourly', { cron: '0 3 * * *', path: '/run' });
    assert.equal(declared(r, daily, at('2026-01-05T09:40:00Z'))?.next?.toISOString(), '2026-01-06T03:00:00.000Z');
    const moved = declare('hourly', { cron: '0 * * * *', path: '/elsewhere' });
    const changed = declared(r, moved, at('2026-01-05T09:40:00Z'))!;
    assert.equal(changed.next?.toISOString(), '2026-01-05T10:00:00.000Z');
    assert.equal(changed.spec.path, '/elsewhere');
  });

  it('a removed schedule declared again runs from the next tick after now', () => {
    const r = removed({ ...fresh(), pending: [{ at: at('2026-01-05T10:00:00Z'), key: 'k', namespace: '' }] });
    assert.equal(r.state, 'removed');
    assert.deepEqual(r.pending, [], 'its pending runs are dropped with it');
    assert.equal(dueOf(r), undefined, 'not due: the tick no longer reads it');
    const back = declared(r, hourly, at('2026-01-05T12:10:00Z'))!;
    assert.equal(back.state, 'active');
    assert.equal(back.next?.toISOString(), '2026-01-05T13:00:00.000Z');
  });
});

describe('planTick()', () => {
  it('not due: nothing to start', () => {
    const plan = planTick(fresh(), hourly, at('2026-01-05T09:59:00Z'), false, place);
    assert.deepEqual(plan.starts, []);
  });

  it('due: one run for the tick, the next tick advanced, the run pending until settled', () => {
    const plan = planTick(fresh(), hourly, at('2026-01-05T10:00:20Z'), false, place);
    assert.deepEqual(plan.starts.map((r) => r.at.toISOString()), ['2026-01-05T10:00:00.000Z']);
    assert.equal(plan.record.next?.toISOString(), '2026-01-05T11:00:00.000Z');
    assert.equal(plan.record.pending.length, 1);
    assert.equal(dueOf(plan.record)?.toISOString(), '2026-01-05T10:00:00.000Z', 'due while its run is pending');
    const again = planTick(plan.record, hourly, at('2026-01-05T10:00:40Z'), false, place);
    assert.deepEqual(again.starts.map((r) => r.at.toISOString()), ['2026-01-05T10:00:00.000Z'], 'a tick after a crash starts the pending run again (same kickoff id), nothing new');
    const done = settled(again.record, [{ run: again.starts[0]!, outcome: 'started', chain: 'c1', retry: false }], at('2026-01-05T10:00:41Z'));
    assert.deepEqual(done.pending, []);
    assert.equal(done.started, 1);
    assert.equal(done.last?.chain, 'c1');
    assert.equal(settled(done, [{ run: again.starts[0]!, outcome: 'started', chain: 'c1', retry: false }], at('2026-01-05T10:00:42Z')).started, 1, 'settled by a second tick: counted once');
    assert.equal(dueOf(done)?.toISOString(), '2026-01-05T11:00:00.000Z');
  });

  it('a store outage keeps the run pending', () => {
    const plan = planTick(fresh(), hourly, at('2026-01-05T10:00:20Z'), false, place);
    const kept = settled(plan.record, [{ run: plan.starts[0]!, outcome: 'failed', error: 'unavailable', retry: true }], at('2026-01-05T10:00:30Z'));
    assert.equal(kept.pending.length, 1);
  });

  it('overlap skip, queue and allow while the last run is live', () => {
    const now = at('2026-01-05T10:00:20Z');
    const skip = planTick(fresh(), hourly, now, true, place);
    assert.deepEqual([skip.starts.length, skip.skipped, skip.queued], [0, 1, false]);
    const queue = declare('hourly', { cron: '0 * * * *', path: '/run', overlap: 'queue' });
    const queued = planTick({ ...fresh(), spec: queue.spec, specHash: queue.specHash }, queue, now, true, place);
    assert.deepEqual([queued.starts.length, queued.skipped, queued.queued], [0, 0, true]);
    assert.equal(queued.record.queued?.toISOString(), '2026-01-05T10:00:00.000Z');
    const later = planTick(queued.record, queue, at('2026-01-05T10:20:00Z'), false, place);
    assert.deepEqual(later.starts.map((r) => r.at.toISOString()), ['2026-01-05T10:00:00.000Z'], 'the queued run starts once the last ended, before its next tick');
    assert.equal(later.record.queued, undefined);
    const allow = declare('hourly', { cron: '0 * * * *', path: '/run', overlap: 'allow', key: (t) => new Key({ path: ['R', t.at.toISOString()] }) });
    const beside = planTick({ ...fresh(), spec: allow.spec, specHash: allow.specHash }, allow, now, true, () => ({ key: 'R:"x"', namespace: '' }));
    assert.equal(beside.starts.length, 1);
  });

  it('a key function that throws fails the run, and the tick goes on', () => {
    const plan = planTick(fresh(), hourly, at('2026-01-05T10:00:20Z'), false, () => new Error('no key'));
    assert.deepEqual(plan.starts, []);
    assert.equal(plan.failed.length, 1);
    assert.equal(plan.record.next?.toISOString(), '2026-01-05T11:00:00.000Z');
  });

  it('paused: no new run; resumed: from the next tick after now', () => {
    const p = paused(fresh());
    assert.equal(dueOf(p), undefined);
    assert.deepEqual(planTick(p, hourly, at('2026-01-05T12:00:20Z'), false, place).starts, []);
    assert.equal(resumed(p, cronTimes('0 * * * *', 'UTC'), at('2026-01-05T12:00:20Z')).next?.toISOString(), '2026-01-05T13:00:00.000Z');
  });
});

describe('runNow()', () => {
  it('remembers the time of each id, the last few', () => {
    let r = fresh();
    const first = runNow(r, 'a', at('2026-01-05T10:10:00Z'));
    r = first.record!;
    assert.equal(runNow(r, 'a', at('2026-01-05T10:20:00Z')).at.toISOString(), '2026-01-05T10:10:00.000Z');
    assert.equal(runNow(r, 'a', at('2026-01-05T10:20:00Z')).record, undefined, 'nothing to write');
    for (let i = 0; i < NOW_RUNS_KEPT; i++) r = runNow(r, `b${i}`, at('2026-01-05T10:30:00Z')).record!;
    assert.equal(r.nowRuns.length, NOW_RUNS_KEPT);
    assert.ok(!r.nowRuns.some((n) => n.id === 'a'), 'the oldest is forgotten');
  });
});

describe('the record, stored and read back', () => {
  it('round-trips every field, and reads a malformed one as absent', () => {
    const plan = planTick(fresh(), hourly, at('2026-01-05T10:00:20Z'), false, place);
    const r = settled(plan.record, [{ run: plan.starts[0]!, outcome: 'failed', error: 'boom', retry: false }], at('2026-01-05T10:00:30Z'));
    assert.deepEqual(readSchedule(scheduleProperties(r)), r);
    assert.equal(readSchedule({ name: 'x' }), undefined);
    assert.equal(readSchedule({ ...scheduleProperties(r), spec: '{"cron":1}' }), undefined);
  });
});

describe('declare(): bad declarations', () => {
  it('names what is wrong', () => {
    assert.throws(() => declare('', { cron: '* * * * *', path: '/run' }), /name must be/);
    assert.throws(() => declare('x', { cron: '* * * * *', path: 'run' }), /path must start/);
    assert.throws(() => declare('x', { cron: '* * * * *', path: '/run', overlap: 'sometimes' as never }), /overlap must be/);
    assert.throws(() => declare('x', { cron: '* * * * *', path: '/run', overlap: 'allow' }), /needs a key per tick/);
    assert.throws(() => declare('x', { cron: '* * * * *', path: '/run', graceMs: -1 }), /graceMs/);
    assert.throws(() => declare('x', { cron: '* * * * *', path: '/run', timezone: 'UTC' } as never), /timeZone/, 'a misspelt option');
  });
});
