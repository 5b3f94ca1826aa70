/**
 * Chaining steps against a real store: kickoffs, `ctx.schedule()`, the outbox and the sweeper
 * (DESIGN section 5). Run by chain.*.test.ts against each store.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import request from 'supertest';
import { taskApp, keys, Counter, TEST_TOKEN } from './support/task-app';
import { RecordingQueue } from './support/recording-queue';
import { ChainBusyError, ConfigError, LeaseLostError, StepAlreadyFinishedError } from '../src/errors';
import { Locker } from '../src/locker';
import { Headers, StepState, type Properties, type TaskRequest } from '../src/types';
import type { StoreUnderTest } from './handle-suite';

let counter = 0;

export function chainSuite(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`chaining on ${name}`, () => {
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
        assert.deepEqual(await s.store.listOutbox(new Date(Date.now() + 60_000), 100).then((r) => r.filter((x) => x.name === step.task)), [], 'the outbox record is cleared once the task exists');
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

    describe('the outbox and the sweeper', () => {
      it('repairs a crash between commit and create: the sweep sends the task and the step runs once', async () => {
        const queue = new RecordingQueue();
        let now = Date.now();
        const t = taskApp(s.store, { queue, clock: () => now, sweepGrace: 60_000 });
        const key = newKey();
        queue.failNext = 1;
        const step = await t.locker.schedule(key, { count: 0 }, '/task');
        assert.equal(step.sent, false);
        assert.equal(queue.tasks.length, 0);
        assert.ok(t.logger.has('sweeper'));
        // too young to sweep
        assert.deepEqual(await t.locker.sweep(), { resent: 0, cleared: 0, failed: 0 });
        now += 61_000;
        const swept = await t.locker.sweep();
        assert.equal(swept.resent, 1);
        assert.equal(queue.tasks.length, 1);
        assert.equal(queue.tasks[0]!.name, step.task);
        assert.equal((await deliver(t, queue.tasks[0]!)).status, 200);
        assert.equal(t.runs.length, 1);
        // the record is gone: another sweep sends nothing
        assert.equal((await t.locker.sweep()).resent, 0);
      });
      it('keeps a record whose task still cannot be created, and clears records whose step moved on', async () => {
        const queue = new RecordingQueue();
        let now = Date.now();
        const t = taskApp(s.store, { queue, clock: () => now });
        const a = newKey();
        const b = newKey();
        queue.failNext = 2;
        await t.locker.schedule(a, {}, '/task');
        await t.locker.schedule(b, {}, '/task');
        // b's step runs anyway (say the task was created but the answer was lost)
        const bTask: TaskRequest = { name: 'x', path: '/task', body: '', headers: { [Headers.key]: t.locker.encodeKey(b), [Headers.seq]: '1' } };
        assert.equal((await deliver(t, bTask)).status, 200);
        now += 61_000;
        queue.failNext = 1;
        const first = await t.locker.sweep();
        assert.equal(first.cleared, 1);
        assert.equal(first.failed + first.resent, 1);
        if (first.failed === 1) assert.equal((await t.locker.sweep()).resent, 1);
        assert.deepEqual(queue.tasks.map((x) => x.headers[Headers.key]), [t.locker.encodeKey(a)]);
      });
      it('mounts the sweep as a route for Cloud Scheduler', async () => {
        const queue = new RecordingQueue();
        const t = taskApp(s.store, { queue });
        t.app.post('/sweep', t.locker.sweepHandler());
        const refused = await request(t.app).post('/sweep');
        assert.equal(refused.status, 401);
        const res = await request(t.app).post('/sweep').set('x-test-auth', TEST_TOKEN);
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), ['cleared', 'failed', 'resent']);
      });
    });

    it('a Locker without a queue cannot schedule, but handles tasks', async () => {
      const locker = new Locker({ store: s.store, authenticate: false });
      await assert.rejects(locker.schedule(newKey(), {}, '/task'), /needs a queue/);
    });
  });
}
