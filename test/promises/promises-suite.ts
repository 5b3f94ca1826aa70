/**
 * The four promises on the paths between features (issue 26): each place where they broke, as the
 * scenario that showed it, run by promises.*.test.ts on the in-memory store and on the Datastore
 * emulators. Every test failed before its fix. A manual clock moves time; tasks are kept and
 * delivered by the test (`KeptTasks`); the sweep runs when the test calls it.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Key } from '@google-cloud/datastore';
import { Counter, keys, taskApp, type TaskApp } from '../support/task-app';
import { KeptTasks, deliver } from '../support/kept-tasks';
import { TestSmtpServer } from '../support/smtp';
import { EmailAlerter } from '../../src/alert/email';
import { alertId } from '../../src/alert/event';
import { PermanentError } from '../../src/errors/errors';
import { readLock } from '../../src/rules/lock-fields';
import type { LockerOptions } from '../../src/config/options';
import { AlertReason, StepState, type AlertEvent, type Properties, type Store } from '../../src/types';
import type { StoreUnderTest } from '../step/handle-suite';

const SEC = 1_000;
const START = Date.parse('2032-03-04T05:06:07.000Z');
let counter = 0;

/** A shared manual clock, a kept queue and an alerter that can be down: one or more Lockers on one store. */
interface World {
  store: Store;
  namespace: string | undefined;
  clock: { now: number };
  queue: KeptTasks;
  received: AlertEvent[];
  alerter: { down: boolean };
  locker(extra?: Partial<LockerOptions>): TaskApp;
  key(): Key;
  /** Moves the clock `stepMs` at a time and sweeps with `t`, until `done()` or `limitMs` of clock time passed. */
  sweepUntil(t: TaskApp, done: () => boolean, limitMs?: number, stepMs?: number): Promise<void>;
}

function world(s: StoreUnderTest): World {
  const clock = { now: START };
  const queue = new KeptTasks();
  const received: AlertEvent[] = [];
  const alerter = { down: false };
  const apps: TaskApp[] = [];
  const w: World = {
    store: s.store, namespace: s.namespace, clock, queue, received, alerter,
    locker(extra = {}) {
      const t = taskApp(s.store, {
        queue, clock: () => clock.now, leaseDuration: 10 * SEC, stallAfter: 20 * SEC, maxRetries: 3, alertTimeout: 2 * SEC,
        alerter: (event) => {
          if (alerter.down) throw new Error('the alerter is down');
          received.push(event);
        },
        ...extra,
      });
      apps.push(t);
      return t;
    },
    key: () => keys.key({ namespace: s.namespace, path: ['Counter', `p${++counter}-${Date.now()}`] }),
    async sweepUntil(t, done, limitMs = 120 * SEC, stepMs = 5 * SEC) {
      for (let waited = 0; !done() && waited <= limitMs; waited += stepMs) {
        clock.now += stepMs;
        await t.locker.sweep();
      }
    },
  };
  return w;
}

/** The stored lock of `key`. */
async function lockOf(store: Store, key: Key) {
  const props = await store.get(key);
  assert.ok(props, 'the entity exists');
  return readLock(props);
}

/** A task of step `seq` on `key` among those kept, the last one created. */
function taskOf(queue: KeptTasks, t: TaskApp, key: Key, seq: number) {
  const encoded = t.locker.encodeKey(key);
  const task = [...queue.tasks].reverse().find((k) => k.headers['x-lock-key'] === encoded && k.headers['x-lock-seq'] === String(seq));
  assert.ok(task, `a task of step ${seq} on ${key.name} was created`);
  return task;
}

/** Leaves `key`'s lease held by an attempt that died (`dead`), as a killed instance leaves it. */
async function strand(store: Store, key: Key, dead: string, at: number): Promise<void> {
  await store.transaction(async (tx) => {
    const props = await tx.get(key);
    assert.ok(props);
    tx.put(key, { ...props, lock_req: dead, lock_ts: new Date(at) }, ['lock_req', 'lock_seq', 'lock_try', 'lock_chain', 'lock_task', 'lock_err', 'lock_alerts']);
  });
}

export function promisesSuite(name: string, open: () => Promise<StoreUnderTest>, options: { oversized?: boolean } = {}): void {
  describe(`the promises between features, on ${name}`, () => {
    let s: StoreUnderTest;
    before(async () => { s = await open(); });
    after(async () => { await s.close?.(); });

    describe('1. a kickoff keeps the alerts still owed', () => {
      for (const how of ['schedule', 'scheduleMany'] as const) {
        it(`sends a failure alert claimed but unsent before a ${how}() kickoff`, async () => {
          const w = world(s);
          const t = w.locker();
          const key = w.key();
          await t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
          w.alerter.down = true;
          t.behave(() => { throw new PermanentError('card declined'); });
          assert.equal((await deliver(t, taskOf(w.queue, t, key, 1))).status, 200);
          const failed = t.runs[0]!.attempt;
          assert.deepEqual((await lockOf(w.store, key)).alerts, [`failure:1:${failed}`], 'claimed, not sent');

          if (how === 'schedule') await t.locker.schedule(key, new Counter({ count: 0, label: 'y' }), '/task');
          else assert.equal((await t.locker.scheduleMany([{ key, entity: new Counter({ count: 0, label: 'y' }), path: '/task' }])).results[0]!.status, 'started');
          w.alerter.down = false;
          const id = alertId(AlertReason.failure, key, 1, failed);
          await w.sweepUntil(t, () => w.received.some((a) => a.id === id));
          const alert = w.received.find((a) => a.id === id);
          assert.ok(alert, 'the failure alert owed before the kickoff reached the alerter');
          assert.equal(alert.reason, 'failure');
          assert.equal(alert.seq, 1);
          assert.equal(alert.previousAttempt, failed);
          assert.ok(!(await lockOf(w.store, key)).alerts.some((m) => m === `failure:1:${failed}`), 'marked sent: no longer owed');
          await t.locker.shutdown();
        });
      }

      it('sends an overwrite alert claimed but unsent before a scheduleMany() kickoff', async () => {
        const w = world(s);
        const t = w.locker();
        const key = w.key();
        await t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
        await strand(w.store, key, 'dead-attempt', w.clock.now);
        w.clock.now += 11 * SEC; // the dead attempt's lease is stale
        w.alerter.down = true;
        assert.equal((await deliver(t, taskOf(w.queue, t, key, 1))).status, 200, 'taken over, and finished');
        assert.equal((await lockOf(w.store, key)).state, StepState.complete);
        assert.equal(w.received.length, 0);

        assert.equal((await t.locker.scheduleMany([{ key, entity: new Counter({ count: 0, label: 'y' }), path: '/task' }])).results[0]!.status, 'started');
        w.alerter.down = false;
        await w.sweepUntil(t, () => w.received.some((a) => a.reason === 'overwrite'));
        const alert = w.received.find((a) => a.reason === 'overwrite');
        assert.ok(alert, 'the overwrite alert owed before the kickoff reached the alerter');
        assert.equal(alert.previousAttempt, 'dead-attempt');
        assert.equal(alert.id, alertId(AlertReason.overwrite, key, 1, 'dead-attempt'));
        await t.locker.shutdown();
      });
    });

    describe('2. a kickoffId never starts a chain twice on an entity', () => {
      for (const after of ['another chain ran', 'the entity was deleted'] as const) {
        it(`recognises its chain after it ended and ${after}`, async () => {
          const w = world(s);
          const t = w.locker();
          const key = w.key();
          const items = [{ key, entity: new Counter({ count: 0, label: 'k' }), path: '/task' }];
          const first = await t.locker.scheduleMany(items, { kickoffId: 'K' });
          assert.equal(first.results[0]!.status, 'started');
          assert.equal((await deliver(t, taskOf(w.queue, t, key, 1))).status, 200);
          assert.equal((await lockOf(w.store, key)).state, StepState.complete, 'chain C is complete');
          if (after === 'another chain ran') {
            const d = await t.locker.schedule(key, new Counter({ count: 0, label: 'd' }), '/task');
            assert.equal((await deliver(t, taskOf(w.queue, t, key, d.seq))).status, 200);
            assert.equal((await lockOf(w.store, key)).state, StepState.complete, 'chain D is complete');
          } else {
            await w.store.transaction(async (tx) => { tx.delete(key); });
          }
          const before = await w.store.get(key);
          const tasks = w.queue.tasks.length;
          const again = await t.locker.scheduleMany(items, { kickoffId: 'K' });
          const result = again.results[0]!;
          assert.equal(result.status, 'started');
          assert.ok(result.status === 'started' && result.resumed, 'recognised as the chain K started before');
          assert.equal(w.queue.tasks.length, tasks, 'no task created');
          assert.deepEqual(await w.store.get(key), before, 'the entity is left as it was');
          assert.equal(t.runs.length, after === 'another chain ran' ? 2 : 1, "C's first step did not run again");
          const fresh = await t.locker.scheduleMany(items, { kickoffId: 'K2' });
          assert.ok(fresh.results[0]!.status === 'started' && !fresh.results[0]!.resumed, 'another kickoffId starts a chain');
          await t.locker.shutdown();
        });
      }
    });

    describe('3. a result the store refuses is never run again unalerted', () => {
      const refusals: Array<[string, (ctx: Parameters<Parameters<TaskApp['behave']>[0]>[0]) => void]> = [
        ['a value the store cannot hold (an array inside an array)', (ctx) => { (ctx.entity as unknown as Properties).grid = [[1, 2], [3]]; }],
        ['a toProperties() that throws', (ctx) => { Object.assign(ctx.entity as object, { toProperties() { throw new Error('cannot serialise'); } }); }],
      ];
      if (options.oversized) refusals.push(['an entity over 1 MiB', (ctx) => { (ctx.entity as unknown as Properties).label = 'x'.repeat(1_100_000); }]);
      for (const [what, change] of refusals) {
        it(`fails the step for good at once, alerted, on ${what}`, async () => {
          const w = world(s);
          const t = w.locker({ excludeFromIndexes: ['label'] });
          const key = w.key();
          await t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
          let effects = 0;
          t.behave((ctx) => { effects++; change(ctx); });
          const task = taskOf(w.queue, t, key, 1);
          for (let i = 0; i < 4; i++) await deliver(t, task);
          assert.equal(effects, 1, 'the handler ran once');
          const lock = await lockOf(w.store, key);
          assert.equal(lock.state, StepState.failed);
          assert.match(lock.err ?? '', /handler ran, but its result could not be stored/);
          const alerts = w.received.filter((a) => a.reason === 'failure');
          assert.equal(alerts.length, 1, 'the failure is alerted');
          assert.match(alerts[0]!.error?.message ?? '', /handler ran, but its result could not be stored/);
          await t.locker.shutdown();
        });
      }

      it('fails the step for good when the handler lets its own refused complete() through', async () => {
        const w = world(s);
        const t = w.locker();
        const key = w.key();
        await t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
        let effects = 0;
        t.behave(async (ctx) => { effects++; (ctx.entity as unknown as Properties).grid = [[1], [2]]; await ctx.complete(); });
        const task = taskOf(w.queue, t, key, 1);
        for (let i = 0; i < 4; i++) await deliver(t, task);
        assert.equal(effects, 1);
        assert.equal((await lockOf(w.store, key)).state, StepState.failed);
        assert.equal(w.received.filter((a) => a.reason === 'failure').length, 1);
        await t.locker.shutdown();
      });
    });

    describe('4. a rate-limited alert stays owed until it is sent', () => {
      let smtp: TestSmtpServer;
      before(async () => { smtp = await TestSmtpServer.start(); });
      after(async () => { await smtp.stop(); });

      it('sends every held-back alert in a later window, from another instance', async () => {
        const w = world(s);
        const email = () => new EmailAlerter({
          transport: smtp.transportOptions(), to: 'ops@example.com', from: 'locker@example.com',
          rateLimit: { max: 1, perMs: 60 * SEC }, clock: () => w.clock.now,
        });
        const alerterA = email();
        const alerterB = email();
        const a = w.locker({ alerter: alerterA, maxRetries: 1 });
        const b = w.locker({ alerter: alerterB, maxRetries: 1 });
        const failing = [w.key(), w.key(), w.key()];
        a.behave(() => { throw new Error('card declined'); });
        const ids: string[] = [];
        for (const key of failing) {
          await a.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
          assert.equal((await deliver(a, taskOf(w.queue, a, key, 1))).status, 200);
          ids.push(alertId(AlertReason.failure, key, 1, a.runs.at(-1)!.attempt));
        }
        const delivered = (): string[] => ids.filter((id) => smtp.messages.some((m) => m.raw.includes(`<${id}@datastore-locker>`)));
        assert.equal(delivered().length, 1, 'one alert in the first window');
        await a.locker.shutdown(); // instance A is gone: what it held back is owed in the store
        await alerterA.shutdown();
        await w.sweepUntil(b, () => delivered().length === ids.length, 600 * SEC, 20 * SEC);
        assert.deepEqual(delivered(), ids, 'every held-back alert reached the mail server');
        for (const key of failing) assert.ok((await lockOf(w.store, key)).alerts.every((m) => m.endsWith(':sent')), 'each marked sent');
        await b.locker.shutdown();
        await alerterB.shutdown();
      });
    });

    describe('5. a hand-back is silent only when the handler says so', () => {
      let payments: Server;
      let charges = 0;
      let url = '';
      let charged: () => void = () => undefined;
      before(async () => {
        payments = createServer((req, res) => {
          req.resume();
          req.on('end', () => {
            charges++; // the charge is made on arrival; the answer comes late
            charged();
            setTimeout(() => res.end('charged'), 2 * SEC).unref();
          });
        });
        await new Promise<void>((resolve) => payments.listen(0, '127.0.0.1', resolve));
        url = `http://127.0.0.1:${(payments.address() as AddressInfo).port}/charge`;
      });
      after(async () => {
        payments.closeAllConnections();
        await new Promise<void>((resolve) => payments.close(() => resolve()));
      });

      /** A payment client of the usual shape: it passes the signal to its request and rejects with an AbortError caused by it. */
      const charge = (signal: AbortSignal, idempotencyKey: string): Promise<void> => new Promise((resolve, reject) => {
        const req = httpRequest(url, { method: 'POST', signal, headers: { 'Idempotency-Key': String(idempotencyKey) } }, (res) => { res.resume(); res.on('end', resolve); });
        req.on('error', reject);
        req.end('{}');
      });

      it('alerts the re-run of a step whose charge was cut by the stop (an AbortError)', async () => {
        const w = world(s);
        const a = w.locker();
        const b = w.locker();
        const key = w.key();
        await a.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
        const keysSeen: string[] = [];
        const handler = async (ctx: Parameters<Parameters<TaskApp['behave']>[0]>[0]): Promise<void> => {
          keysSeen.push(ctx.idempotencyKey);
          await charge(ctx.signal, ctx.idempotencyKey);
        };
        a.behave(handler);
        b.behave(handler);
        charges = 0;
        const task = taskOf(w.queue, a, key, 1);
        const posted = new Promise<void>((resolve) => { charged = resolve; });
        const answer = deliver(a, task).then((r) => r);
        await Promise.race([posted, answer]);
        assert.equal(charges, 1, 'the payment server took the charge');
        await a.locker.shutdown({ timeoutMs: 1_000 });
        const first = await answer;
        assert.equal(first.status, 503, first.text);
        assert.equal(charges, 1);

        assert.equal((await deliver(b, task)).status, 200);
        assert.equal(charges, 2, 'charged again on re-delivery');
        const alert = w.received.find((e) => e.reason === 'overwrite');
        assert.ok(alert, 'the second charge is named by an alert');
        assert.equal(alert.previousAttempt, a.runs[0]!.attempt);
        assert.equal(keysSeen.length, 2);
        assert.equal(keysSeen[0], keysSeen[1], 'both attempts carried the same idempotency key');
        await b.locker.shutdown();
      });

      for (const how of ['ctx.handBack()', 'rejecting with ctx.signal.reason'] as const) {
        it(`hands back silently on ${how} before the effect`, async () => {
          const w = world(s);
          const a = w.locker();
          const b = w.locker();
          const key = w.key();
          await a.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
          let started!: () => void;
          const running = new Promise<void>((resolve) => { started = resolve; });
          a.behave(async (ctx) => {
            started();
            await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
            if (how === 'ctx.handBack()') ctx.handBack();
            throw ctx.signal.reason;
          });
          const task = taskOf(w.queue, a, key, 1);
          const answer = deliver(a, task).then((r) => r);
          await running;
          await a.locker.shutdown({ timeoutMs: 1_000 });
          assert.equal((await answer).status, 503);
          const lock = await lockOf(w.store, key);
          assert.equal(lock.req, '', 'handed back: the lease is free');
          assert.equal(lock.tries, 0, 'no attempt counted');
          assert.equal((await deliver(b, task)).status, 200);
          assert.equal(w.received.length, 0, 'no alert: the handler said it stopped before its effect');
          await b.locker.shutdown();
        });
      }

      it('gives each step of each chain its own idempotency key, the same on every attempt', async () => {
        const w = world(s);
        const t = w.locker();
        const key = w.key();
        const seen: Array<{ seq: number; key: string }> = [];
        let fail = true;
        t.behave((ctx) => {
          seen.push({ seq: ctx.seq, key: ctx.idempotencyKey });
          if (fail) { fail = false; throw new Error('retry me'); }
        });
        await t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
        const task = taskOf(w.queue, t, key, 1);
        assert.equal((await deliver(t, task)).status, 500);
        assert.equal((await deliver(t, task)).status, 200);
        const next = await t.locker.schedule(key, new Counter({ count: 0, label: 'y' }), '/task');
        assert.equal((await deliver(t, taskOf(w.queue, t, key, next.seq))).status, 200);
        assert.equal(seen.length, 3);
        assert.equal(seen[0]!.key, seen[1]!.key, 'a retry of the step: the same key');
        assert.notEqual(seen[2]!.key, seen[0]!.key, 'the next chain: another key');
        assert.match(seen[0]!.key, /^[0-9a-f]{32}-1$/);
        await t.locker.shutdown();
      });
    });

    describe('6. cancel() keeps the overwrite alerts still owed', () => {
      it('sends an overwrite alert claimed but unsent before a cancel', async () => {
        const w = world(s);
        const t = w.locker();
        const key = w.key();
        await t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
        await strand(w.store, key, 'dead-attempt', w.clock.now);
        w.clock.now += 11 * SEC;
        w.alerter.down = true;
        t.behave(() => { throw new Error('declined'); });
        assert.equal((await deliver(t, taskOf(w.queue, t, key, 1))).status, 500, 'taken over, then released');
        await t.locker.cancel(key);
        w.alerter.down = false;
        await w.sweepUntil(t, () => w.received.some((a) => a.reason === 'overwrite'));
        const alert = w.received.find((a) => a.reason === 'overwrite');
        assert.ok(alert, 'the overwrite alert owed at the cancel reached the alerter');
        assert.equal(alert.previousAttempt, 'dead-attempt');
        assert.equal((await lockOf(w.store, key)).state, StepState.cancelled);
        await t.locker.shutdown();
      });
    });
  });
}
