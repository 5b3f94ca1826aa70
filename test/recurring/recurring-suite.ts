/**
 * Recurring work against a real store (run by recurring.*.test.ts on the in-memory store and on
 * both Datastore emulators): ticks on a fake clock, through `locker.tick()` and the sweep route as
 * the heartbeat calls it. Each case says how many runs the guide promises and checks that no
 * step ran twice.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { keys } from '../support/task-app';
import type { StoreUnderTest } from '../step/handle-suite';
import { assertEachStepOnce, recurringRig, runsOf, tickKey } from './recurring-rig';

const MIN = 60_000;
let counter = 0;

export function recurringSuite(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`recurring work on ${name}`, { concurrency: 1 }, () => {
    let s: StoreUnderTest;
    before(async () => { s = await open(); });
    after(async () => { await s.close?.(); });
    /** A schedule namespace of the test's own: no other test's schedules are due in it. */
    const space = (): string => `${s.namespace ?? 'rec'}-sched-${++counter}`;

    it('starts one run per tick; a tick delivered three times at once starts it once', async () => {
      const rig = recurringRig(s.store, space(), Date.UTC(2026, 0, 5, 10, 0, 30));
      const locker = rig.instance();
      locker.recurring('every-5', { cron: '*/5 * * * *', path: '/run' });
      const first = await locker.tick();
      assert.equal(first.declared, 1, 'the first tick wrote the schedule');
      assert.equal(first.started, 0, 'nothing is due at 10:00:30');
      rig.now = Date.UTC(2026, 0, 5, 10, 5, 10);
      const three = await Promise.all([locker.tick(), locker.tick(), locker.tick()]);
      assert.equal(three.reduce((n, r) => n + r.started, 0) >= 1, true, JSON.stringify(three));
      await rig.deliverAll();
      assert.deepEqual(runsOf(rig, 'every-5'), ['2026-01-05T10:05:00.000Z']);
      rig.now = Date.UTC(2026, 0, 5, 10, 9, 0);
      assert.equal((await locker.tick()).started, 0, 'not due again before 10:10');
      rig.now = Date.UTC(2026, 0, 5, 10, 10, 1);
      await locker.tick();
      await rig.deliverAll();
      assert.deepEqual(runsOf(rig, 'every-5'), ['2026-01-05T10:05:00.000Z', '2026-01-05T10:10:00.000Z']);
      assertEachStepOnce(rig);
      const [view] = (await locker.inspect().schedules()).schedules;
      assert.equal(view?.name, 'every-5');
      assert.equal(view?.started, 2);
      assert.equal(view?.next?.toISOString(), '2026-01-05T10:15:00.000Z');
      assert.equal(view?.last?.outcome, 'started');
    });

    it('30 schedules due at one tick start once each (legacy Datastore takes at most 25 entity groups in a transaction)', async () => {
      const rig = recurringRig(s.store, space(), Date.UTC(2026, 0, 5, 9, 59, 30));
      const locker = rig.instance();
      const names = Array.from({ length: 30 }, (_, i) => `many-${i}`);
      for (const name of names) locker.recurring(name, { cron: '* * * * *', path: '/run' });
      assert.equal((await locker.tick()).declared, 30);
      rig.now = Date.UTC(2026, 0, 5, 10, 0, 5);
      const result = await locker.tick();
      assert.equal(result.due, 30);
      assert.equal(result.started, 30);
      await rig.deliverAll();
      for (const name of names) assert.deepEqual(runsOf(rig, name), ['2026-01-05T10:00:00.000Z'], name);
      assertEachStepOnce(rig);
    });

    it('two instances ticking together start each run once', async () => {
      const rig = recurringRig(s.store, space(), Date.UTC(2026, 0, 5, 9, 59, 0));
      const a = rig.instance();
      const b = rig.instance();
      const ns = rig.namespace;
      for (const locker of [a, b]) {
        locker.recurring('report', { cron: '0 * * * *', path: '/run', key: (tick) => tickKey(keys, ns, 'report', tick.at), overlap: 'allow' });
        locker.recurring('cleanup', { cron: '*/30 * * * *', path: '/run' });
      }
      await Promise.all([a.tick(), b.tick()]);
      for (const hour of [10, 11, 12]) {
        rig.now = Date.UTC(2026, 0, 5, hour, 0, 5);
        await Promise.all([a.tick(), b.tick(), a.tick()]);
        await rig.deliverAll();
        rig.now = Date.UTC(2026, 0, 5, hour, 30, 5);
        await Promise.all([b.tick(), a.tick()]);
        await rig.deliverAll();
      }
      assert.deepEqual(runsOf(rig, 'report'), ['2026-01-05T10:00:00.000Z', '2026-01-05T11:00:00.000Z', '2026-01-05T12:00:00.000Z']);
      assert.deepEqual(runsOf(rig, 'cleanup'), ['10:00', '10:30', '11:00', '11:30', '12:00', '12:30'].map((t) => `2026-01-05T${t}:00.000Z`));
      assertEachStepOnce(rig);
    });

    it('after an outage of 3 hours: coalesce runs once, each runs the ticks within the grace, skip runs none', async () => {
      const rig = recurringRig(s.store, space(), Date.UTC(2026, 0, 5, 9, 30, 0));
      const locker = rig.instance();
      const ns = rig.namespace;
      const common = { cron: '0 * * * *', path: '/run', overlap: 'allow' as const };
      locker.recurring('coalesce', { ...common, misfire: 'coalesce', key: (t) => tickKey(keys, ns, 'coalesce', t.at) });
      locker.recurring('each', { ...common, misfire: 'each', graceMs: 100 * MIN, key: (t) => tickKey(keys, ns, 'each', t.at) });
      locker.recurring('skip', { ...common, misfire: 'skip', graceMs: 20 * MIN, key: (t) => tickKey(keys, ns, 'skip', t.at) });
      await locker.tick();
      // Nothing ticks from 09:30 to 13:30: the 10:00, 11:00, 12:00 and 13:00 ticks are missed.
      rig.now = Date.UTC(2026, 0, 5, 13, 30, 0);
      const result = await locker.tick();
      await rig.deliverAll();
      assert.deepEqual(runsOf(rig, 'coalesce'), ['2026-01-05T13:00:00.000Z'], 'one run, for the latest tick');
      assert.deepEqual(runsOf(rig, 'each'), ['2026-01-05T12:00:00.000Z', '2026-01-05T13:00:00.000Z'], 'the ticks no older than 100 min');
      assert.deepEqual(runsOf(rig, 'skip'), [], 'the latest tick is 30 min old, past its 20 min grace');
      assert.equal(result.started, 3);
      assert.equal(result.skipped, 2 + 4, 'each skipped 10:00 and 11:00; skip skipped all four');
      rig.now = Date.UTC(2026, 0, 5, 14, 0, 30);
      await locker.tick();
      await rig.deliverAll();
      for (const n of ['coalesce', 'each', 'skip']) assert.ok(runsOf(rig, n).includes('2026-01-05T14:00:00.000Z'), `${n} runs on time again`);
      assertEachStepOnce(rig);
    });

    it('overlap: skip leaves a tick out while the last run is live; queue runs it once the last ends', async () => {
      const rig = recurringRig(s.store, space(), Date.UTC(2026, 0, 5, 9, 59, 30));
      const locker = rig.instance();
      locker.recurring('skipper', { cron: '* * * * *', path: '/run' });
      locker.recurring('queuer', { cron: '* * * * *', path: '/run', overlap: 'queue' });
      await locker.tick();
      rig.now = Date.UTC(2026, 0, 5, 10, 0, 5);
      assert.equal((await locker.tick()).started, 2);
      // Both runs are live (their tasks not delivered yet): the next two ticks overlap.
      rig.now = Date.UTC(2026, 0, 5, 10, 1, 5);
      const second = await locker.tick();
      assert.equal(second.started, 0);
      assert.equal(second.queued, 1, 'queuer queued its 10:01 run');
      rig.now = Date.UTC(2026, 0, 5, 10, 2, 5);
      const third = await locker.tick();
      assert.equal(third.started, 0);
      assert.equal(third.skipped, 2, 'skipper skipped 10:02; queuer replaced its queued 10:01 run with 10:02');
      await rig.deliverAll(); // the 10:00 runs end
      rig.now = Date.UTC(2026, 0, 5, 10, 2, 40);
      const fourth = await locker.tick();
      assert.equal(fourth.started, 1, 'the queued run starts once the last ended');
      await rig.deliverAll();
      assert.deepEqual(runsOf(rig, 'skipper'), ['2026-01-05T10:00:00.000Z']);
      assert.deepEqual(runsOf(rig, 'queuer'), ['2026-01-05T10:00:00.000Z', '2026-01-05T10:02:00.000Z']);
      assertEachStepOnce(rig);
    });

    it('a schedule removed from the code stops and is reported; declared again, it runs from then on', async () => {
      const rig = recurringRig(s.store, space(), Date.UTC(2026, 0, 5, 9, 59, 30));
      const old = rig.instance();
      old.recurring('kept', { cron: '* * * * *', path: '/run' });
      old.recurring('dropped', { cron: '* * * * *', path: '/run' });
      await old.tick();
      const next = rig.instance();
      next.recurring('kept', { cron: '* * * * *', path: '/run' });
      rig.now = Date.UTC(2026, 0, 5, 10, 0, 5);
      const result = await next.tick();
      assert.deepEqual(result.removed, ['dropped']);
      assert.equal(result.started, 1);
      assert.ok(rig.logger.lines.some((l) => l.level === 'warn' && l.message.includes('not declared by this code') && l.fields?.schedule === 'dropped'));
      await rig.deliverAll();
      rig.now = Date.UTC(2026, 0, 5, 10, 1, 5);
      assert.deepEqual((await next.tick()).removed, [], 'reported once: a removed schedule is not due');
      await rig.deliverAll();
      assert.deepEqual(runsOf(rig, 'dropped'), []);
      const views = (await next.inspect().schedules()).schedules;
      const dropped = views.find((v) => v.name === 'dropped');
      assert.equal(dropped?.state, 'removed');
      assert.equal(dropped?.next, undefined);
      // The old code ticks again (a rolling deploy): it declares it, so it runs from its next tick.
      rig.now = Date.UTC(2026, 0, 5, 10, 1, 30);
      await old.tick();
      rig.now = Date.UTC(2026, 0, 5, 10, 2, 5);
      await old.tick();
      await rig.deliverAll();
      assert.deepEqual(runsOf(rig, 'dropped'), ['2026-01-05T10:02:00.000Z']);
      assertEachStepOnce(rig);
    });

    it('pause stops the ticks, resume runs from the next one; run now is once per id', async () => {
      const rig = recurringRig(s.store, space(), Date.UTC(2026, 0, 5, 9, 59, 30));
      const locker = rig.instance();
      const ns = rig.namespace;
      locker.recurring('hourly', { cron: '0 * * * *', path: '/run', key: (t) => tickKey(keys, ns, 'hourly', t.at), overlap: 'allow' });
      await locker.tick();
      assert.equal(await locker.pauseSchedule('hourly'), true);
      assert.equal(await locker.pauseSchedule('hourly'), false, 'paused already');
      rig.now = Date.UTC(2026, 0, 5, 12, 0, 5);
      assert.equal((await locker.tick()).started, 0, 'paused: nothing runs');
      assert.equal(await locker.resumeSchedule('hourly'), true);
      assert.equal((await locker.tick()).started, 0, 'the ticks while paused are not made up');
      rig.now = Date.UTC(2026, 0, 5, 13, 0, 5);
      assert.equal((await locker.tick()).started, 1);
      rig.now = Date.UTC(2026, 0, 5, 13, 20, 0);
      const [one, two] = await Promise.all([locker.runScheduleNow('hourly', 'confirm-1'), locker.runScheduleNow('hourly', 'confirm-1')]);
      assert.equal(one.at.getTime(), two.at.getTime(), 'the same run');
      rig.now = Date.UTC(2026, 0, 5, 13, 25, 0);
      const again = await locker.runScheduleNow('hourly', 'confirm-1');
      assert.equal(again.at.getTime(), one.at.getTime(), 'a call made later with the same id finds the first run');
      await rig.deliverAll();
      assert.deepEqual(runsOf(rig, 'hourly'), ['2026-01-05T13:00:00.000Z', '2026-01-05T13:20:00.000Z']);
      const [view] = (await locker.inspect().schedules()).schedules;
      assert.equal(view?.started, 2, 'the 13:00 tick and the run now, each counted once (three calls with the id)');
      assert.equal(view?.last?.at.toISOString(), '2026-01-05T13:20:00.000Z');
      // Confirmed again after its run ended (found by the model, issue 39): still one run, counted once.
      rig.now = Date.UTC(2026, 0, 5, 13, 30, 0);
      const late = await locker.runScheduleNow('hourly', 'confirm-1');
      assert.equal(late.at.getTime(), one.at.getTime());
      await rig.deliverAll();
      assert.deepEqual(runsOf(rig, 'hourly'), ['2026-01-05T13:00:00.000Z', '2026-01-05T13:20:00.000Z'], 'no second run');
      assert.equal((await locker.inspect().schedules()).schedules.find((v) => v.name === 'hourly')?.started, 2, 'the 13:00 tick and the run now, each counted once');
      await assert.rejects(locker.runScheduleNow('nope', 'x'), /no schedule named "nope"/);
      assertEachStepOnce(rig);
    });

    const dstDays = [
      { zone: 'Europe/Berlin', cron: '30 2 * * *', from: '2026-03-28T22:00:00Z', runs: ['2026-03-29T01:00:00.000Z'], what: 'spring forward: 02:30 does not exist; it runs once, at 03:00' },
      { zone: 'Europe/Berlin', cron: '30 2 * * *', from: '2026-10-24T22:00:00Z', runs: ['2026-10-25T00:30:00.000Z'], what: 'fall back: 02:30 happens twice; it runs once' },
      { zone: 'America/New_York', cron: '30 2 * * *', from: '2026-03-08T04:00:00Z', runs: ['2026-03-08T07:00:00.000Z'], what: 'spring forward: it runs once, at 03:00' },
      { zone: 'America/New_York', cron: '30 1 * * *', from: '2026-11-01T03:00:00Z', runs: ['2026-11-01T05:30:00.000Z'], what: 'fall back: 01:30 happens twice; it runs once' },
    ];
    for (const day of dstDays) {
      it(`DST in ${day.zone}, ${day.what} (ticks every 20 min for 6 hours on a fake clock)`, async () => {
        const rig = recurringRig(s.store, space(), new Date(day.from).getTime());
        const locker = rig.instance();
        const ns = rig.namespace;
        locker.recurring('nightly', { cron: day.cron, timeZone: day.zone, path: '/run', overlap: 'allow', key: (t) => tickKey(keys, ns, 'nightly', t.at) });
        for (let t = 0; t <= 6 * 60; t += 20) {
          rig.now = new Date(day.from).getTime() + t * MIN + 5_000;
          await locker.tick();
          await rig.deliverAll();
        }
        assert.deepEqual(runsOf(rig, 'nightly'), day.runs);
        assertEachStepOnce(rig);
      });
    }

    it('the sweep route is the heartbeat: a sweep ticks and answers what the tick did', async () => {
      const rig = recurringRig(s.store, space(), Date.UTC(2026, 0, 5, 9, 59, 30));
      const locker = rig.instance();
      locker.recurring('beat', { cron: '* * * * *', path: '/run' });
      await locker.sweep();
      rig.now = Date.UTC(2026, 0, 5, 10, 0, 1);
      const swept = await locker.sweep();
      assert.ok(swept.recurring && 'started' in swept.recurring && swept.recurring.started === 1, JSON.stringify(swept.recurring));
      await rig.deliverAll();
      assert.deepEqual(runsOf(rig, 'beat'), ['2026-01-05T10:00:00.000Z']);
    });
  });
}
