/**
 * Fan-out on the paths between it and the rest (issue 37: defects 3, 4 and 8, and the suspected
 * cases): the alerts a fanning step still owes, the join step before its trigger, a failing child
 * source, and the operator's calls on parents, children and joins. Run by fanout.*.test.ts on the
 * in-memory store and on both Datastore emulators. A manual clock moves time; tasks are kept and
 * delivered by the test over HTTP (`KeptTasks`, supertest); the sweep runs when the test calls it;
 * store faults are injected at the seam (`SeamStore`).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import request from 'supertest';
import type { Key } from '@google-cloud/datastore';
import { Counter, keys, taskApp, TEST_TOKEN, type TaskApp } from '../support/task-app';
import { KeptTasks, deliver } from '../support/kept-tasks';
import { SeamStore } from '../support/seam-store';
import { readLock } from '../../src/rules/lock-fields';
import { fanOutId, headerKey } from '../../src/fanout/records';
import { FAILED_RECORD_RETENTION_MS } from '../../src/rules/stall';
import type { FanIn, FanOutChild } from '../../src/fanout/types';
import type { TaskContext } from '../../src/step/handler-types';
import { StepState, type AlertEvent, type TaskRequest } from '../../src/types';
import type { StoreUnderTest } from '../step/handle-suite';

const SEC = 1_000;
const START = Date.parse('2033-04-05T06:07:08.000Z');
let counter = 0;

/** One Locker on a store behind the seam, with a manual clock, kept tasks and an alerter that can be down. */
interface World {
  store: SeamStore;
  clock: { now: number };
  queue: KeptTasks;
  received: AlertEvent[];
  alerter: { down: boolean };
  t: TaskApp;
  /** What each join run saw (`ctx.fanIn()`), by the parent's name. */
  joins: Array<{ parent: string; seq: number; fanIn: FanIn | undefined }>;
  /** Runs of the `/other` route. */
  others: string[];
  key(kind: string): Key;
  sweepUntil(done: () => boolean, limitMs?: number, stepMs?: number): Promise<void>;
}

function world(s: StoreUnderTest): World {
  const clock = { now: START };
  const queue = new KeptTasks();
  const received: AlertEvent[] = [];
  const alerter = { down: false };
  const store = new SeamStore(s.store);
  const t = taskApp(store, {
    queue, clock: () => clock.now, leaseDuration: 10 * SEC, stallAfter: 20 * SEC, maxRetries: 3, alertTimeout: 2 * SEC,
    alerter: (event) => {
      if (alerter.down) throw new Error('the alerter is down');
      received.push(event);
    },
  });
  const joins: World['joins'] = [];
  const others: string[] = [];
  t.app.post('/other', t.locker.handle<Counter>((ctx) => { others.push(`${ctx.key.name}#${ctx.seq}`); }, (p) => new Counter(p)));
  const w: World = {
    store, clock, queue, received, alerter, t, joins, others,
    key: (kind) => keys.key({ namespace: s.namespace, path: [kind, `e${++counter}-${Date.now()}`] }),
    async sweepUntil(done, limitMs = 60 * SEC, stepMs = 5 * SEC) {
      for (let waited = 0; !done() && waited <= limitMs; waited += stepMs) {
        clock.now += stepMs;
        await t.locker.sweep();
      }
    },
  };
  return w;
}

/** The handler: an `Order` fans out at step 1 to `children(ctx)` and joins at step 2 (recording `fanIn()`); a `Line` completes. */
function fanning(w: World, children: (ctx: TaskContext<Counter>) => Iterable<FanOutChild> | AsyncIterable<FanOutChild>): void {
  w.t.behave(async (ctx) => {
    if (ctx.key.kind !== 'Order') return;
    if (ctx.seq === 1) {
      await ctx.fanOut(children(ctx), { join: '/task' });
      return;
    }
    w.joins.push({ parent: ctx.key.name!, seq: ctx.seq, fanIn: await ctx.fanIn() });
  });
}

function child(key: Key): FanOutChild {
  return { key, path: '/task', entity: new Counter({ count: 0, label: 'child' }) };
}

async function lockOf(w: World, key: Key) {
  const props = await w.store.get(key);
  assert.ok(props, 'the entity exists');
  return readLock(props);
}

/** The last task kept for step `seq` on `key`. */
function taskOf(w: World, key: Key, seq: number): TaskRequest {
  const encoded = w.t.locker.encodeKey(key);
  const task = [...w.queue.tasks].reverse().find((k) => k.headers['x-lock-key'] === encoded && k.headers['x-lock-seq'] === String(seq));
  assert.ok(task, `a task of step ${seq} on ${key.name} was created`);
  return task;
}

/** Tasks kept for step `seq` on `key`. */
function tasksOf(w: World, key: Key, seq: number): number {
  const encoded = w.t.locker.encodeKey(key);
  return w.queue.tasks.filter((k) => k.headers['x-lock-key'] === encoded && k.headers['x-lock-seq'] === String(seq)).length;
}

/** Leaves `key`'s lease held by an attempt that died (`dead`), as a killed instance leaves it. */
async function strand(w: World, key: Key, dead: string): Promise<void> {
  await w.store.transaction(async (tx) => {
    const props = await tx.get(key);
    assert.ok(props);
    tx.put(key, { ...props, lock_req: dead, lock_ts: new Date(w.clock.now) }, ['lock_req', 'lock_seq', 'lock_try', 'lock_chain', 'lock_task', 'lock_err', 'lock_alerts']);
  });
}

/** Starts `parent`'s chain at step 1. */
async function startParent(w: World, parent: Key): Promise<void> {
  await w.t.locker.schedule(parent, new Counter({ count: 0, label: 'order' }), '/task');
}

export function fanOutEndsSuite(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`fan-out's ends and edges on ${name}`, () => {
    let s: StoreUnderTest;
    before(async () => { s = await open(); });
    after(async () => { await s.close?.(); });

    describe('the seal keeps the alerts the fanning step still owes (defect 3)', () => {
      for (const then of ['nothing', 'cancelFanOut()', 'cancel()', 'a nested cancel'] as const) {
        it(`an overwrite alert unsent when the step fanned out reaches the alerter; then ${then}`, async () => {
          const w = world(s);
          const parent = w.key('Order');
          const line = w.key('Line');
          const grandchild = w.key('Line');
          // The step that fans out with an alert owed: the parent's, or (nested) its child's, which fans out in turn.
          const owing = then === 'a nested cancel' ? line : parent;
          w.t.behave(async (ctx) => {
            if (ctx.seq !== 1) return;
            if (ctx.key.name === parent.name) await ctx.fanOut([child(line)], { join: '/task' });
            else if (ctx.key.name === line.name && then === 'a nested cancel') await ctx.fanOut([child(grandchild)], { join: '/task' });
          });
          await startParent(w, parent);
          if (owing === line) assert.equal((await deliver(w.t, taskOf(w, parent, 1))).status, 200, 'the parent fanned out');
          await strand(w, owing, 'dead-attempt');
          w.clock.now += 11 * SEC; // the dead attempt's lease is stale
          w.alerter.down = true;
          assert.equal((await deliver(w.t, taskOf(w, owing, 1))).status, 200, 'taken over, and fanned out');
          assert.equal((await lockOf(w, owing)).seq, 2, 'sealed: waiting at its join');
          assert.equal(w.received.length, 0, 'the overwrite alert was not sent: the alerter is down');
          if (then === 'cancelFanOut()' || then === 'a nested cancel') await w.t.locker.cancelFanOut(parent);
          if (then === 'cancel()') await w.t.locker.cancel(parent);
          if (then !== 'nothing') assert.equal((await lockOf(w, owing)).state, StepState.cancelled, 'the fanning step\'s entity is cancelled');
          w.alerter.down = false;
          await w.sweepUntil(() => w.received.some((a) => a.reason === 'overwrite'));
          const alerts = w.received.filter((a) => a.reason === 'overwrite');
          assert.equal(alerts.length, 1, 'the owed overwrite alert reached the alerter, once');
          assert.equal(alerts[0]!.previousAttempt, 'dead-attempt');
          assert.equal(alerts[0]!.key.name, owing.name);
          assert.deepEqual((await lockOf(w, owing)).alerts.filter((m) => !m.endsWith(':sent')), [], 'no alert is owed any more');
          await w.sweepUntil(() => false, 30 * SEC);
          assert.equal(w.received.filter((a) => a.reason === 'overwrite').length, 1, 'sent once');
          assert.equal(tasksOf(w, owing, 1), 1, 'the kept record of the fanning step is never delivered again');
          await w.t.locker.shutdown();
        });
      }
    });

    describe('the join step runs only from its trigger (defect 4)', () => {
      for (const how of ['another route, no chain header', 'the join\'s route, with the chain header', 'the join\'s route and body, no chain header'] as const) {
        it(`a request for the join step before its trigger runs nothing: ${how}`, async () => {
          const w = world(s);
          const parent = w.key('Order');
          const line = w.key('Line');
          fanning(w, () => [child(line)]);
          await startParent(w, parent);
          assert.equal((await deliver(w.t, taskOf(w, parent, 1))).status, 200, 'fanned out and sealed');
          const before = await lockOf(w, parent);
          assert.equal(before.seq, 2);
          const path = how === 'another route, no chain header' ? '/other' : '/task';
          const forged = request(w.t.app).post(path).set('x-test-auth', TEST_TOKEN)
            .set('x-lock-key', w.t.locker.encodeKey(parent)).set('x-lock-seq', '2').set('content-type', 'application/json');
          if (how === 'the join\'s route, with the chain header') forged.set('x-lock-chain', String(before.chain));
          const answer = await forged.send(how === 'another route, no chain header' ? '{"refund":true}' : '');
          assert.equal(answer.status, 400, `refused: ${answer.text}`);
          assert.match(answer.text, /no ledger record|not issued/);
          assert.equal(w.others.length, 0, 'the other route\'s handler never ran');
          assert.equal(w.joins.length, 0, 'the join never ran before its trigger');
          const after = await lockOf(w, parent);
          assert.equal(after.seq, 2);
          assert.equal(after.state, StepState.scheduled, 'the parent still waits at its join');
          assert.equal(after.req, '', 'no lease was taken');
          assert.ok(w.t.logger.has('refused'), 'the refusal is logged');
          // The real join runs once, from its trigger, and sees its child.
          assert.equal((await deliver(w.t, taskOf(w, line, 1))).status, 200, 'the child completed');
          assert.equal((await deliver(w.t, taskOf(w, parent, 2))).status, 200, 'the join ran');
          assert.equal(w.joins.length, 1);
          assert.equal(w.joins[0]!.fanIn?.counts.succeeded, 1, 'the join saw its child');
          assert.equal((await lockOf(w, parent)).state, StepState.complete);
          await w.t.locker.shutdown();
        });
      }
    });

    describe('an error escaping ctx.fanOut() is a failed attempt, retried (defect 8)', () => {
      for (const how of ['the child source throws', 'a child is named twice'] as const) {
        it(`${how}: the attempt fails (500, a retry counted), the retry resumes, each child starts once`, async () => {
          const w = world(s);
          const parent = w.key('Order');
          const lines = [w.key('Line'), w.key('Line'), w.key('Line')];
          let attempts = 0;
          fanning(w, () => {
            const first = ++attempts === 1;
            if (how === 'a child is named twice') return first ? [child(lines[0]!), child(lines[1]!), child(lines[0]!)] : lines.map(child);
            return (async function* () {
              for (const [i, key] of lines.entries()) {
                if (first && i === 2) throw new Error('the source\'s API timed out');
                yield child(key);
              }
            })();
          });
          await startParent(w, parent);
          const task = taskOf(w, parent, 1);
          const failed = await deliver(w.t, task);
          assert.equal(failed.status, 500, `a failed attempt: ${failed.text}`);
          const lock = await lockOf(w, parent);
          assert.equal(lock.state, StepState.scheduled, 'not failed for good');
          assert.equal(lock.tries, 1, 'a retry counted');
          assert.equal(lock.req, '', 'the lease was released');
          assert.doesNotMatch(lock.err ?? '', /could not be stored/);
          const retried = await deliver(w.t, task);
          assert.equal(retried.status, 200, `the retry resumed and sealed: ${retried.text}`);
          assert.equal((await lockOf(w, parent)).seq, 2, 'waiting at its join');
          for (const key of lines) assert.equal(tasksOf(w, key, 1), 1, `${key.name} started once`);
          assert.equal(w.received.length, 0, 'no alert: nothing ran twice unannounced, nothing failed for good');
          for (const key of lines) assert.equal((await deliver(w.t, taskOf(w, key, 1))).status, 200);
          assert.equal((await deliver(w.t, taskOf(w, parent, 2))).status, 200);
          assert.equal(w.joins.length, 1);
          assert.equal(w.joins[0]!.fanIn?.counts.succeeded, 3, 'the join saw every child');
          await w.t.locker.shutdown();
        });
      }

      it('a store fault while adding children: the lease is handed back written stale (503), the next delivery takes over alerted and resumes', async () => {
        // The handler's code before fanOut() ran, and may have had its effect: its next run is named by an alert.
        const w = world(s);
        const parent = w.key('Order');
        const lines = [w.key('Line'), w.key('Line')];
        fanning(w, () => lines.map(child));
        await startParent(w, parent);
        w.store.inject({ at: 'LockerFanOutPage' });
        const task = taskOf(w, parent, 1);
        const first = await deliver(w.t, task);
        assert.equal(first.status, 503, first.text);
        const firstAttempt = w.t.runs.at(-1)!.attempt;
        const lock = await lockOf(w, parent);
        assert.equal(lock.req, firstAttempt, 'the lease is written stale, its holder kept');
        assert.equal(lock.state, StepState.scheduled);
        assert.equal((await deliver(w.t, task)).status, 200, 'the next delivery took over, resumed and sealed');
        assert.equal(w.t.events.filter((e) => e.name === 'overwritten').length, 1, 'one overwrite');
        assert.deepEqual(w.received.map((a) => [a.reason, a.previousAttempt]), [['overwrite', firstAttempt]], 'its alert names the attempt the fault stopped');
        for (const key of lines) assert.equal(tasksOf(w, key, 1), 1, `${key.name} started once`);
        await w.t.locker.shutdown();
      });
    });

    describe('the operator\'s calls on a fan-out\'s parts (the suspected cases)', () => {
      it('retry() on a failed child, rather than retryFanOutChildren(): refused, saying which to call', async () => {
        const w = world(s);
        const parent = w.key('Order');
        const line = w.key('Line');
        fanning(w, () => [child(line)]);
        await startParent(w, parent);
        assert.equal((await deliver(w.t, taskOf(w, parent, 1))).status, 200);
        w.t.behave(async (ctx) => {
          if (ctx.key.kind === 'Line') throw new (await import('../../src/errors/errors')).PermanentError('declined');
        });
        assert.equal((await deliver(w.t, taskOf(w, line, 1))).status, 200, 'the child failed for good');
        assert.equal((await lockOf(w, line)).state, StepState.failed);
        await assert.rejects(w.t.locker.retry(line), /retryFanOutChildren/, 'retry() on a failed child points to retryFanOutChildren()');
        assert.equal((await lockOf(w, line)).state, StepState.failed, 'nothing changed');
        await w.t.locker.shutdown();
      });

      it('cancelFanOut() on a join that fans out again: the join\'s own fan-out is cancelled, not refused as "join already started"', async () => {
        const w = world(s);
        const parent = w.key('Order');
        const line = w.key('Line');
        w.t.behave(async (ctx) => {
          if (ctx.key.kind !== 'Order') return;
          if (ctx.seq === 1) await ctx.fanOut([child(line)], { join: '/task' });
          else if (ctx.seq === 2) {
            await ctx.fanOut((async function* () {
              throw new (await import('../../src/errors/errors')).PermanentError('the second source is gone');
            })(), { join: '/task' });
          }
        });
        await startParent(w, parent);
        assert.equal((await deliver(w.t, taskOf(w, parent, 1))).status, 200);
        assert.equal((await deliver(w.t, taskOf(w, line, 1))).status, 200);
        assert.equal((await deliver(w.t, taskOf(w, parent, 2))).status, 200, 'the join fanned out again and failed for good while writing');
        const lock = await lockOf(w, parent);
        assert.equal(lock.seq, 2);
        assert.equal(lock.state, StepState.failed);
        const second = fanOutId(parent, String(lock.chain), 2);
        assert.equal((await w.store.get(headerKey(second, s.namespace)))?.state, 'writing');
        const result = await w.t.locker.cancelFanOut(parent);
        assert.equal(result.fanout, second, 'the join\'s own fan-out was the one cancelled');
        assert.equal(result.was, 'writing');
        assert.equal((await w.store.get(headerKey(second, s.namespace)))?.state, 'cancelled');
        assert.equal((await w.store.get(headerKey(fanOutId(parent, String(lock.chain), 1), s.namespace)))?.state, 'joining', 'the first fan-out is left as it was');
        await w.t.locker.shutdown();
      });

      it('resend() on a parent waiting at its join: refused, saying it waits for its children', async () => {
        const w = world(s);
        const parent = w.key('Order');
        fanning(w, () => [child(w.key('Line'))]);
        await startParent(w, parent);
        assert.equal((await deliver(w.t, taskOf(w, parent, 1))).status, 200);
        await assert.rejects(w.t.locker.resend(parent), /waits for its fan-out's children/);
        await w.t.locker.shutdown();
      });

      it('a parent whose fanning step failed more than 30 days ago: its `writing` fan-out is cancelled, not swept forever', async () => {
        const w = world(s);
        const parent = w.key('Order');
        const line = w.key('Line');
        fanning(w, () => (async function* () {
          yield child(line);
          throw new (await import('../../src/errors/errors')).PermanentError('the source is gone for good');
        })());
        await startParent(w, parent);
        assert.equal((await deliver(w.t, taskOf(w, parent, 1))).status, 200, 'failed for good');
        const lock = await lockOf(w, parent);
        assert.equal(lock.state, StepState.failed);
        const id = fanOutId(parent, String(lock.chain), 1);
        w.clock.now += FAILED_RECORD_RETENTION_MS + 60 * SEC;
        // The sweep that abandons it cancels its children, and looks once more a `stallAfter` later (a
        // racing attempt may have added children meanwhile); the one after finds none and lets it go.
        for (let round = 0; round < 3; round++) {
          await w.t.locker.sweep();
          w.clock.now += 25 * SEC;
        }
        const header = await w.store.get(headerKey(id, s.namespace));
        assert.equal(header?.state, 'cancelled', 'the sweep gave the fan-out up with the failed step\'s record');
        assert.match(String(header?.reason), /30 days|retry/);
        assert.equal(header?.due, undefined, 'no longer due: the sweep stops looking');
        await w.t.locker.shutdown();
      });
    });
  });
}
