/**
 * Chaining steps against a real store: kickoffs, `ctx.schedule()`, the outbox and the sweeper
 * (docs/design.md, section 5). Run by chain.*.test.ts against each store.
 */
import { describe, it, before, beforeEach, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import request from 'supertest';
import { taskApp, keys, Counter, TEST_TOKEN } from '../support/task-app';
import { RecordingQueue } from '../support/recording-queue';
import { ChainBusyError, ConfigError, LeaseLostError, StepAlreadyFinishedError } from '../../src/errors/errors';
import { Locker } from '../../src/locker';
import { Headers, StepState, type Properties, type TaskRequest } from '../../src/types';
import type { StoreUnderTest } from '../step/handle-suite';

let counter = 0;

export function chainSuite(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`chaining on ${name}`, { concurrency: 1 }, () => {
    let s: StoreUnderTest;
    before(async () => { s = await open(); });
    after(async () => { await s.close?.(); });

    const newKey = (): Key => keys.key({ namespace: s.namespace, path: ['Counter', `c${++counter}-${Date.now()}`] });
    const stored = async (key: Key): Promise<Properties> => {
      const props = await s.store.get(key);
      assert.ok(props, 'entity exists');
      return props;
    };
    /** Delivers a recorded task to the app as the queue would. */
    const deliver = (t: ReturnType<typeof taskApp>, task: TaskRequest) => {
      const req = request(t.app).post('/task').set('x-test-auth', TEST_TOKEN);
      for (const [h, v] of Object.entries(task.headers)) req.set(h, v);
      return task.body ? req.set('content-type', 'application/json').send(task.body) : req;
    };

    describe('kickoff: locker.schedule()', () => {
      it('saves the entity with step 1 scheduled and creates its task', async () => {
        const queue = new RecordingQueue();
        const t = taskApp(s.store, { queue });
        const key = newKey();
        const step = await t.locker.schedule(key, new Counter({ count: 7, label: 'go' }), '/task', { note: 'first' });
        assert.equal(step.seq, 1);
        assert.equal(step.sent, true);
        const props = await stored(key);
        assert.equal(props.count, 7);
        assert.equal(props.lock_seq, 1);
        assert.equal(props.lock_state, StepState.scheduled);
        assert.equal(props.lock_req, '');
        assert.equal(props.lock_task, step.task);
        assert.equal(queue.tasks.length, 1);
        const task = queue.tasks[0]!;
        assert.equal(task.name, step.task);
        assert.match(task.name, /^[0-9a-f]{32}-1$/);
        assert.equal(task.path, '/task');
        assert.equal(task.headers[Headers.key], t.locker.encodeKey(key));
        assert.equal(task.headers[Headers.seq], '1');
        assert.equal(task.headers[Headers.chain], props.lock_chain);
        assert.deepEqual(JSON.parse(task.body), { note: 'first' });
        const [record] = (await s.store.listDue(new Date(Date.now() + 3_600_000), 1000)).records.filter((r) => r.id === step.task);
        assert.ok(record, 'the ledger keeps the step while it is live');
        assert.equal(record.task, step.task);
        assert.equal(record.sends, 1);
        assert.equal(record.chain, props.lock_chain);
      });
      it('refuses a kickoff while a step is scheduled or running', async () => {
        const t = taskApp(s.store, { queue: new RecordingQueue() });
        const key = newKey();
        await t.locker.schedule(key, { count: 0 }, '/task');
        await assert.rejects(t.locker.schedule(key, { count: 0 }, '/task'), ChainBusyError);
      });
      it('starts a new chain after the last one completed, with new task names', async () => {
        const queue = new RecordingQueue();
        const t = taskApp(s.store, { queue });
        const key = newKey();
        const first = await t.locker.schedule(key, { count: 0 }, '/task');
        assert.equal((await deliver(t, queue.tasks[0]!)).status, 200);
        const chain1 = (await stored(key)).lock_chain;
        const second = await t.locker.schedule(key, { count: 0 }, '/task');
        assert.equal(second.seq, 3);
        assert.notEqual(second.task, first.task);
        assert.notEqual((await stored(key)).lock_chain, chain1);
        // the first chain's task, delivered again, is dropped
        assert.equal((await deliver(t, queue.tasks[0]!)).status, 200);
        assert.equal(t.runs.length, 1);
        assert.equal((await deliver(t, queue.tasks[1]!)).status, 200);
        assert.equal(t.runs.length, 2);
      });
      it('never reuses a task name after the entity is deleted and created again', async () => {
        const queue = new RecordingQueue();
        const t = taskApp(s.store, { queue });
        const key = newKey();
        const before = await t.locker.schedule(key, { count: 0 }, '/task');
        await s.store.transaction(async (tx) => { tx.delete(key); });
        const after = await t.locker.schedule(key, { count: 0 }, '/task');
        assert.equal(after.seq, before.seq);
        assert.notEqual(after.task, before.task);
      });
      it('checks what it is asked to schedule before writing anything', async () => {
        const t = taskApp(s.store, { queue: new RecordingQueue() });
        const key = newKey();
        await assert.rejects(t.locker.schedule(key, {}, 'no-slash'), TypeError);
        await assert.rejects(t.locker.schedule(key, {}, '/task', 'x'.repeat(200_000)), RangeError);
        await assert.rejects(t.locker.schedule(key, {}, '/task', null, { delayMs: 31 * 24 * 3600 * 1000 }), RangeError);
        assert.equal(await s.store.get(key), undefined);
        await assert.rejects(taskApp(s.store).locker.schedule(key, {}, '/task'), ConfigError);
      });
      it('passes a delay on as the task schedule time', async () => {
        const queue = new RecordingQueue();
        const t = taskApp(s.store, { queue });
        const before = Date.now();
        await t.locker.schedule(newKey(), {}, '/task', null, { delayMs: 5 * 60_000 });
        const at = queue.tasks[0]!.scheduleTime!.getTime();
        assert.ok(at >= before + 5 * 60_000 && at <= Date.now() + 5 * 60_000);
      });
    });

    describe('ctx.schedule(): chaining from inside a handler', () => {
      it('commits the next step with the entity changes and creates its task; the next delivery runs it', async () => {
        const queue = new RecordingQueue();
        const t = taskApp(s.store, { queue });
        const key = newKey();
        await t.locker.schedule(key, new Counter({ count: 0 }), '/task');
        t.behave(async (ctx) => {
          ctx.entity.count += 1;
          if (ctx.entity.count < 3) await ctx.schedule('/task', { step: ctx.seq + 1 });
        });
        for (let i = 0; i < 3; i++) assert.equal((await deliver(t, queue.tasks[i]!)).status, 200);
        assert.deepEqual(t.runs.map((r) => r.seq), [1, 2, 3]);
        assert.equal(queue.tasks.length, 3);
        assert.deepEqual(JSON.parse(queue.tasks[2]!.body), { step: 3 });
        const props = await stored(key);
        assert.equal(props.count, 3);
        assert.equal(props.lock_seq, 4);
        assert.equal(props.lock_state, StepState.complete);
        // every earlier task again is a duplicate
        for (const task of queue.tasks) assert.equal((await deliver(t, task)).status, 200);
        assert.equal(t.runs.length, 3);
      });
      it('runs a step of an entity the Go library wrote, and gives the chain an id when it schedules', async () => {
        const queue = new RecordingQueue();
        const t = taskApp(s.store, { queue });
        const key = newKey();
        await s.store.transaction(async (tx) => {
          tx.put(key, { count: 4, lock_ts: new Date(), lock_req: '', lock_seq: 7, lock_try: 0 }, []); // no lock_state, no lock_chain
        });
        t.behave(async (ctx) => { await ctx.schedule('/task'); });
        const goTask: TaskRequest = { name: 'go', path: '/task', body: '', headers: { [Headers.key]: t.locker.encodeKey(key), [Headers.seq]: '7' } };
        assert.equal((await deliver(t, goTask)).status, 200);
        assert.equal(t.runs.length, 1);
        const props = await stored(key);
        assert.equal(props.lock_seq, 8);
        assert.equal(typeof props.lock_chain, 'string');
        assert.equal(queue.tasks[0]!.headers[Headers.chain], props.lock_chain);
      });
      it('is fenced: a handler that lost its lease cannot schedule', async () => {
        const queue = new RecordingQueue();
        const t = taskApp(s.store, { queue });
        const key = newKey();
        await t.locker.schedule(key, { count: 0 }, '/task');
        let thrown: unknown;
        t.behave(async (ctx) => {
          const current = (await s.store.get(ctx.key))!;
          await s.store.transaction(async (tx) => { tx.put(ctx.key, { ...current, lock_req: 'thief' }, []); });
          try { await ctx.schedule('/task'); } catch (error) { thrown = error; throw error; }
        });
        assert.equal((await deliver(t, queue.tasks[0]!)).status, 503);
        assert.ok(thrown instanceof LeaseLostError);
        assert.equal(queue.tasks.length, 1);
        assert.equal((await stored(key)).lock_seq, 1);
      });
      it('refuses a second schedule() in the same step', async () => {
        const queue = new RecordingQueue();
        const t = taskApp(s.store, { queue });
        const key = newKey();
        await t.locker.schedule(key, { count: 0 }, '/task');
        let second: unknown;
        t.behave(async (ctx) => {
          await ctx.schedule('/task');
          await ctx.schedule('/task').catch((e: unknown) => { second = e; });
        });
        assert.equal((await deliver(t, queue.tasks[0]!)).status, 200);
        assert.ok(second instanceof StepAlreadyFinishedError, 'a mistake in the handler, not a lost lease');
        assert.equal(queue.tasks.length, 2);
      });
    });

    describe('the ledger and the sweep', () => {
      // A sweep reads every due record its store can see: each test sweeps a store (and namespace) of its own.
      beforeEach(async () => { s = await open(); });
      const STALL = 120_000;
      /** A task app on a clock the test moves, with `stallAfter` of two minutes. */
      const clocked = (queue: RecordingQueue, options: Parameters<typeof taskApp>[1] = {}) => {
        const clock = { now: Date.now() };
        const t = taskApp(s.store, { queue, clock: () => clock.now, stallAfter: STALL, ...options });
        return { t, clock };
      };
      const ledgerOf = async (key: Key, id: string) => s.store.transaction((tx) => tx.getLedger(key, id));

      it('re-delivers a step whose task was never created, under a new name, once it stalled', async () => {
        const queue = new RecordingQueue();
        const { t, clock } = clocked(queue);
        const key = newKey();
        queue.failNext = 1;
        const step = await t.locker.schedule(key, { count: 0 }, '/task');
        assert.equal(step.sent, false);
        assert.ok(t.logger.has('sweep re-delivers'));
        clock.now += STALL - 1;
        assert.equal((await t.locker.sweep()).resent, 0, 'not stalled yet');
        clock.now += 1;
        assert.equal((await t.locker.sweep()).resent, 1);
        assert.equal(queue.tasks.length, 1);
        const resent = queue.tasks[0]!;
        assert.notEqual(resent.name, step.task);
        assert.ok(resent.name.startsWith(`${step.task}-s2-`));
        assert.equal(resent.headers[Headers.send], '2');
        const record = await ledgerOf(key, step.task);
        assert.equal(record?.task, resent.name);
        assert.equal(record?.sends, 2);
        assert.equal((await deliver(t, resent)).status, 200);
        assert.equal(t.runs.length, 1);
        await t.locker.shutdown(); // waits for the lazy removal
        assert.equal(await ledgerOf(key, step.task), undefined, 'removed after the step finished');
      });

      it('re-delivers a step whose lease was released and whose retry was lost', async () => {
        const queue = new RecordingQueue();
        const { t, clock } = clocked(queue);
        const key = newKey();
        const step = await t.locker.schedule(key, { count: 0 }, '/task');
        const t0 = clock.now;
        t.behave(() => { throw new Error('first attempt fails'); });
        clock.now = t0 + 1000;
        assert.equal((await deliver(t, queue.tasks[0]!)).status, 500);
        t.behave(() => {});
        clock.now = t0 + STALL;
        assert.equal((await t.locker.sweep()).waiting, 1, 'the release was progress: not stalled yet');
        assert.equal((await ledgerOf(key, step.task))!.due.getTime(), t0 + 1000 + STALL);
        clock.now = t0 + 1000 + STALL;
        assert.equal((await t.locker.sweep()).resent, 1);
        assert.equal((await deliver(t, queue.tasks[1]!)).status, 200);
        assert.equal(t.runs.length, 2);
        assert.equal((await stored(key)).lock_state, StepState.complete);
      });

      it('waits while a lease is fresh, and re-delivers once it is stale: the takeover is alerted', async () => {
        const queue = new RecordingQueue();
        const { t, clock } = clocked(queue, { leaseDuration: 60_000 });
        const key = newKey();
        await t.locker.schedule(key, { count: 0 }, '/task');
        const props = await stored(key);
        const id = props.lock_task as string;
        const t0 = clock.now;
        // an attempt holds the lease and renewed it a second ago
        await s.store.transaction(async (tx) => { tx.put(key, { ...props, lock_req: 'holder', lock_ts: new Date(t0 + STALL - 1000) }, []); });
        clock.now = t0 + STALL;
        assert.equal((await t.locker.sweep()).waiting, 1, 'a fresh lease is progress');
        const moved = await ledgerOf(key, id);
        assert.equal(moved!.due.getTime(), t0 + 2 * STALL - 1000, 'looked at again stallAfter after the renewal');
        assert.equal(queue.tasks.length, 1);
        // the holder's process died: nothing renews the lease, which goes stale
        clock.now = moved!.due.getTime();
        assert.equal((await t.locker.sweep()).resent, 1);
        assert.equal((await deliver(t, queue.tasks[1]!)).status, 200);
        assert.equal(t.runs.length, 1);
        assert.deepEqual(t.alerts.map((a) => a.reason), ['overwrite']);
        assert.equal((await stored(key)).lock_state, StepState.complete);
      });

      it('clears the records of steps that finished, and keeps a step alive across a chain', async () => {
        const queue = new RecordingQueue();
        const { t, clock } = clocked(queue);
        const key = newKey();
        const first = await t.locker.schedule(key, { count: 0 }, '/task');
        const left = (await ledgerOf(key, first.task))!;
        t.behave(async (ctx) => { if (ctx.seq < 2) await ctx.schedule('/task'); });
        assert.equal((await deliver(t, queue.tasks[0]!)).status, 200);
        assert.equal(await ledgerOf(key, first.task), undefined, 'ctx.schedule() removes the record in its commit');
        const second = (await stored(key)).lock_task as string;
        assert.ok(await ledgerOf(key, second));
        assert.equal((await deliver(t, queue.tasks[1]!)).status, 200);
        await t.locker.shutdown();
        assert.equal(await ledgerOf(key, second), undefined);
        // a record left behind (its lazy removal failed) is cleared by the sweep
        await s.store.transaction(async (tx) => { tx.putLedger(left); });
        clock.now += STALL;
        const swept = await t.locker.sweep();
        assert.equal(swept.cleared, 1);
        assert.equal(swept.resent, 0);
        assert.equal(await ledgerOf(key, first.task), undefined);
      });

      it('backs off a record whose re-delivery keeps failing, without starving the others', async () => {
        const queue = new RecordingQueue();
        const { t, clock } = clocked(queue);
        const a = newKey();
        const b = newKey();
        queue.failNext = 1;
        await t.locker.schedule(a, {}, '/task');
        clock.now += 1;
        queue.failNext = 1;
        await t.locker.schedule(b, {}, '/task');
        clock.now += STALL + 1;
        queue.failNext = 1;
        const first = await t.locker.sweep(1);
        assert.deepEqual({ failed: first.failed, resent: first.resent }, { failed: 1, resent: 0 });
        const second = await t.locker.sweep(1);
        assert.equal(second.resent, 1, 'the failing record moved back: the next one is swept');
        assert.deepEqual(queue.tasks.map((x) => x.headers[Headers.key]), [t.locker.encodeKey(b)]);
        assert.equal((await t.locker.sweep()).resent, 0, 'a is backing off');
        clock.now += STALL / 4; // the first failure's backoff; b was re-sent a moment ago, so it is not due
        assert.equal((await t.locker.sweep()).resent, 1);
        assert.deepEqual(queue.tasks.map((x) => x.headers[Headers.key]), [t.locker.encodeKey(b), t.locker.encodeKey(a)]);
      });

      it('skips and logs a malformed record, and sweeps the rest', async () => {
        const queue = new RecordingQueue();
        const { t, clock } = clocked(queue);
        const key = newKey();
        queue.failNext = 1;
        await t.locker.schedule(key, {}, '/task');
        const bad = keys.key({ namespace: s.namespace, path: ['LockerOutbox', `bad-${counter}`] });
        await s.store.transaction(async (tx) => { tx.put(bad, { due: new Date(clock.now), seq: -1 }, []); });
        clock.now += STALL;
        const swept = await t.locker.sweep();
        assert.equal(swept.malformed, 1);
        assert.equal(swept.resent, 1);
        assert.ok(t.logger.has('malformed'));
        await s.store.transaction(async (tx) => { tx.delete(bad); });
      });

      it('sweeps a step whose record is due behind more malformed records than its limit, and logs them in bounded lines', async () => {
        const queue = new RecordingQueue();
        const { t, clock } = clocked(queue);
        const key = newKey();
        queue.failNext = 1;
        await t.locker.schedule(key, {}, '/task');
        const bad = Array.from({ length: 25 }, (_, i) => keys.key({ namespace: s.namespace, path: ['LockerOutbox', `bad-${counter}-${i}`] }));
        // Due before the step's record, so they come first in the sweep's query.
        await s.store.transaction(async (tx) => { for (const k of bad) tx.put(k, { due: new Date(clock.now - 1_000), seq: -1 }, []); });
        clock.now += STALL;
        const before = t.logger.lines.length;
        const swept = await t.locker.sweep(5);
        assert.equal(swept.malformed, 25);
        assert.equal(swept.resent, 1);
        assert.deepEqual(queue.tasks.map((x) => x.headers[Headers.key]), [t.locker.encodeKey(key)]);
        const logged = t.logger.lines.slice(before).filter((l) => l.message.includes('malformed'));
        assert.equal(logged.filter((l) => l.message === 'ledger record skipped: it is malformed').length, 20);
        assert.deepEqual(logged.filter((l) => l.message === 'more malformed ledger records skipped').map((l) => l.fields?.more), [5]);
        await s.store.transaction(async (tx) => { for (const k of bad) tx.delete(k); });
      });

      it('re-delivers a restored backup under fresh names, past the duplicate cache, and the chain completes', async () => {
        const queue = new RecordingQueue();
        const { t, clock } = clocked(queue);
        const key = newKey();
        await t.locker.schedule(key, new Counter({ count: 0 }), '/task');
        t.behave(async (ctx) => { ctx.entity.count += 1; if (ctx.seq < 3) await ctx.schedule('/task'); });
        assert.equal((await deliver(t, queue.tasks[0]!)).status, 200);
        const backup = await stored(key);
        const backupRecord = (await ledgerOf(key, backup.lock_task as string))!;
        for (let i = 1; i < queue.tasks.length; i++) assert.equal((await deliver(t, queue.tasks[i]!)).status, 200);
        assert.equal((await stored(key)).lock_state, StepState.complete);
        const used = new Set(queue.tasks.map((x) => x.name));
        // the backup is restored: the entity at step 2, and its ledger record
        await s.store.transaction(async (tx) => { tx.put(key, backup, []); tx.putLedger(backupRecord); });
        for (let sweeps = 0; (await stored(key)).lock_state !== StepState.complete; sweeps++) {
          assert.ok(sweeps < 4, 'the chain completes within a few sweeps');
          clock.now += 4 * STALL;
          const before = queue.tasks.length;
          await t.locker.sweep();
          for (const task of queue.tasks.slice(before)) {
            assert.ok(!used.has(task.name), `${task.name} is a fresh name`);
            assert.equal((await deliver(t, task)).status, 200);
          }
        }
        assert.deepEqual(t.runs.map((r) => r.seq), [1, 2, 3, 2, 3]);
        assert.equal((await stored(key)).count, 3);
      });

      it('mounts the sweep as a route for Cloud Scheduler', async () => {
        const queue = new RecordingQueue();
        const t = taskApp(s.store, { queue });
        t.app.post('/sweep', t.locker.sweepHandler());
        const refused = await request(t.app).post('/sweep');
        assert.equal(refused.status, 401);
        const res = await request(t.app).post('/sweep').set('x-test-auth', TEST_TOKEN);
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), ['alerted', 'cleared', 'failed', 'malformed', 'resent', 'waiting']);
      });
    });

    it('a Locker without a queue cannot schedule, but handles tasks', async () => {
      const locker = new Locker({ store: s.store, authenticate: false });
      await assert.rejects(locker.schedule(newKey(), {}, '/task'), /needs a queue/);
    });
  });
}
