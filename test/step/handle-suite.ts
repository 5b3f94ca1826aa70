/**
 * `locker.handle()` against a real store: every row of the lease table (docs/design.md, section 4), run by
 * handle.*.test.ts against each store.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import express4 from 'express4';
import type { Express } from 'express';
import type { Key } from '@google-cloud/datastore';
import { taskApp, keys, Counter, TEST_TOKEN } from '../support/task-app';
import { PermanentError, LeaseLostError, LeaseTimeoutError, StoreUnavailableError } from '../../src/errors/errors';
import { StepState, type Properties, type Snapshot, type Store, type StoreTransaction } from '../../src/types';
import request from 'supertest';
import { aborted } from '../support/aborted';

export interface StoreUnderTest {
  store: Store;
  namespace: string | undefined;
  close?(): Promise<void>;
}

let counter = 0;

export function handleSuite(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`handle() on ${name}`, { concurrency: 1 }, () => {
    let s: StoreUnderTest;
    before(async () => { s = await open(); });
    after(async () => { await s.close?.(); });

    const newKey = (kind = 'Counter'): Key => keys.key({ namespace: s.namespace, path: [kind, `k${++counter}-${Date.now()}`] });
    const seed = async (key: Key, props: Properties): Promise<void> => {
      await s.store.transaction(async (tx) => { tx.put(key, props, []); });
    };
    const scheduled = (seq: number, over: Properties = {}): Properties => ({
      count: 1, label: 'x', lock_ts: new Date(), lock_req: '', lock_seq: seq, lock_try: 0, lock_state: StepState.scheduled, lock_chain: 'c1', ...over,
    });
    const stored = async (key: Key): Promise<Properties> => {
      const props = await s.store.get(key);
      assert.ok(props, 'entity exists');
      return props;
    };

    describe('requests that never touch the store', () => {
      it('refuses a request without credentials with 401, before reading anything', async () => {
        const t = taskApp(counting(s.store));
        const res = await request(t.app).post('/task').set('x-lock-key', t.locker.encodeKey(newKey())).set('x-lock-seq', '1');
        assert.equal(res.status, 401);
        assert.equal(t.runs.length, 0);
        assert.equal(touches(t.locker.config.store), 0);
        assert.ok(t.logger.has('refused'));
      });
      it('answers 400 to malformed X-Lock-Key and X-Lock-Seq, a wrong kind and bad JSON, and logs each', async () => {
        const t = taskApp(counting(s.store));
        const key = t.locker.encodeKey(newKey());
        const cases: Array<[string, string, string | undefined]> = [
          ['%%%', '1', undefined], ['AAAA', '1', undefined], [key, 'abc', undefined], [key, '0', undefined], [key, '-1', undefined],
          [key, '1.5', undefined], [key, '99999999999999999999', undefined], [key, '1', '{not json'],
        ];
        for (const [k, seq, body] of cases) {
          let req = request(t.app).post('/task').set('x-test-auth', TEST_TOKEN).set('x-lock-key', k).set('x-lock-seq', seq);
          if (body !== undefined) req = req.set('content-type', 'application/json').send(body);
          const res = await req;
          assert.equal(res.status, 400, `${k.slice(0, 10)} ${seq} ${body}`);
        }
        const noKey = await request(t.app).post('/task').set('x-test-auth', TEST_TOKEN).set('x-lock-seq', '1');
        assert.equal(noKey.status, 400);
        assert.equal(t.runs.length, 0);
        assert.equal(touches(t.locker.config.store), 0);
        assert.equal(t.logger.lines.filter((l) => l.message === 'task request rejected').length, cases.length + 1);
      });
      it('answers 400 to a kind the route does not serve', async () => {
        const store = counting(s.store);
        const t = taskApp(store);
        const app = express4();
        app.post('/only-orders', t.locker.handle(() => {}, (p) => p, { kinds: ['Order'] }));
        const res = await request(app).post('/only-orders').set('x-test-auth', TEST_TOKEN)
          .set('x-lock-key', t.locker.encodeKey(newKey('Counter'))).set('x-lock-seq', '1');
        assert.equal(res.status, 400);
        assert.match(res.text, /kind "Counter"/);
        assert.equal(touches(store), 0);
      });
      it('answers 405 to a GET', async () => {
        const t = taskApp(s.store);
        assert.equal((await request(t.app).get('/task')).status, 404); // express routes POST only
        const app = express4();
        app.all('/any', t.locker.handle(() => {}, (p) => p));
        assert.equal((await request(app).get('/any').set('x-test-auth', TEST_TOKEN)).status, 405);
      });
    });

    describe('tasks that are dropped with 200', () => {
      it('drops a task for an entity that does not exist (orphan)', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        const res = await t.send(key, 1);
        assert.equal(res.status, 200);
        assert.match(res.text, /does not exist/);
        assert.equal(t.runs.length, 0);
        assert.equal(await s.store.get(key), undefined);
      });
      it('drops a replay of an older sequence (a duplicate of a finished step) without running it', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        await seed(key, scheduled(5));
        const res = await t.send(key, 4);
        assert.equal(res.status, 200);
        assert.match(res.text, /duplicate/);
        assert.equal(t.runs.length, 0);
        assert.equal((await stored(key)).lock_seq, 5);
      });
      it('drops a step that was never scheduled (sequence ahead of the entity)', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        await seed(key, scheduled(2));
        assert.equal((await t.send(key, 3)).status, 200);
        assert.equal(t.runs.length, 0);
        assert.deepEqual(t.events.map((e) => e.name), ['dropped']);
      });
      it('drops a step that failed for good', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        await seed(key, scheduled(2, { lock_state: StepState.failed, lock_try: 3 }));
        const res = await t.send(key, 2);
        assert.equal(res.status, 200);
        assert.match(res.text, /failed for good/);
        assert.equal(t.runs.length, 0);
      });
      it('drops a task of an earlier chain of the same entity', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        await seed(key, scheduled(2, { lock_chain: 'new-chain' }));
        assert.equal((await t.send(key, 2, undefined, { 'x-lock-chain': 'old-chain' })).status, 200);
        assert.equal(t.runs.length, 0);
      });
    });

    describe('a free lease', () => {
      it('runs the handler with the typed entity, payload, task metadata and a live signal, then completes the step', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        await seed(key, scheduled(1, { count: 41, label: 'start', extra: 'kept' }));
        let seen: { entity: Counter; payload: unknown; seq: number; attempt: string; retry?: number; name?: string; aborted: boolean } | undefined;
        t.behave((ctx) => {
          seen = { entity: ctx.entity, payload: ctx.payload, seq: ctx.seq, attempt: ctx.attempt, retry: ctx.task.retryCount, name: ctx.task.name, aborted: ctx.signal.aborted };
          ctx.entity.count += 1;
        });
        const res = await t.send(key, 1, { hello: 'world' }, { 'x-cloudtasks-taskname': 'task-1', 'x-cloudtasks-queuename': 'q', 'x-cloudtasks-taskretrycount': '2' });
        assert.equal(res.status, 200, res.text);
        assert.ok(seen);
        assert.ok(seen.entity instanceof Counter);
        assert.equal(seen.entity.label, 'start');
        assert.deepEqual(seen.payload, { hello: 'world' });
        assert.equal(seen.seq, 1);
        assert.equal(seen.retry, 2);
        assert.equal(seen.name, 'task-1');
        assert.equal(seen.aborted, false);
        assert.match(seen.attempt, /^[0-9a-f-]{36}$/);
        const after = await stored(key);
        assert.equal(after.count, 42, 'entity changes are saved');
        assert.equal(after.extra, 'kept', 'properties the factory ignores are kept');
        assert.equal(after.lock_seq, 2);
        assert.equal(after.lock_state, StepState.complete);
        assert.equal(after.lock_req, '');
        assert.deepEqual(t.events.map((e) => e.name), ['acquired', 'completed']);
        // and the same task again is a duplicate
        assert.equal((await t.send(key, 1)).status, 200);
        assert.equal(t.runs.length, 1);
      });
      it('lets the handler end the chain explicitly with ctx.complete()', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        await seed(key, scheduled(3));
        t.behave(async (ctx) => { ctx.entity.label = 'done'; await ctx.complete(); });
        assert.equal((await t.send(key, 3)).status, 200);
        const after = await stored(key);
        assert.equal(after.lock_seq, 4);
        assert.equal(after.lock_state, StepState.complete);
        assert.equal(after.label, 'done');
      });
      it('runs the handler exactly once under N concurrent deliveries of one step', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        await seed(key, scheduled(1));
        t.behave(() => new Promise((r) => setTimeout(r, 50)));
        const answers = await Promise.all(Array.from({ length: 8 }, () => t.send(key, 1)));
        assert.equal(t.runs.length, 1, `statuses ${answers.map((a) => a.status)}`);
        for (const a of answers) assert.ok(a.status === 200 || a.status === 503, String(a.status));
        const again = await t.send(key, 1);
        assert.equal(again.status, 200);
        assert.equal(t.runs.length, 1);
        assert.equal((await stored(key)).lock_seq, 2);
      });
      it('works on Express 4 too', async () => {
        const t = taskApp(s.store, {}, express4 as unknown as () => Express);
        const key = newKey();
        await seed(key, scheduled(1));
        assert.equal((await t.send(key, 1, { a: 1 })).status, 200);
        assert.equal(t.runs.length, 1);
      });
      it('reads the body when express.json() ran before it', async () => {
        const t = taskApp(s.store);
        const app = express4();
        app.use(express4.json());
        let payload: unknown;
        app.post('/p', t.locker.handle((ctx) => { payload = ctx.payload; }, (p) => p));
        const key = newKey();
        await seed(key, scheduled(1));
        const res = await request(app).post('/p').set('x-test-auth', TEST_TOKEN).set('x-lock-key', t.locker.encodeKey(key)).set('x-lock-seq', '1').send({ n: 7 });
        assert.equal(res.status, 200);
        assert.deepEqual(payload, { n: 7 });
      });
    });

    describe('a held lease', () => {
      it('refuses a step whose fresh lease another attempt holds: 503 with Retry-After, not run', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        await seed(key, scheduled(1, { lock_req: 'someone-else', lock_ts: new Date(Date.now() - 15_000) }));
        const res = await t.send(key, 1);
        assert.equal(res.status, 503);
        assert.equal(res.headers['retry-after'], '45');
        assert.equal(t.runs.length, 0);
        assert.equal((await stored(key)).lock_req, 'someone-else');
      });
      it('uses the configured lock-failed status', async () => {
        const t = taskApp(s.store, { lockFailedStatus: 429 });
        const key = newKey();
        await seed(key, scheduled(1, { lock_req: 'someone-else' }));
        assert.equal((await t.send(key, 1)).status, 429);
      });
      it('overwrites a stale lease, counts the lost attempt, reports it and runs the handler', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        await seed(key, scheduled(1, { lock_req: 'crashed', lock_ts: new Date(Date.now() - 61_000) }));
        let during: Properties | undefined;
        t.behave(async (ctx) => { during = await s.store.get(ctx.key); });
        const res = await t.send(key, 1);
        assert.equal(res.status, 200);
        assert.equal(t.runs.length, 1);
        assert.equal(during?.lock_req, t.runs[0]!.attempt, 'the lease was taken over by this attempt');
        assert.equal(during?.lock_try, 1);
        assert.deepEqual(t.events.map((e) => e.name), ['overwritten', 'completed']);
        await t.locker.shutdown();
        assert.equal(t.alerts.length, 1);
        assert.equal(t.alerts[0]!.reason, 'overwrite');
        assert.equal(t.alerts[0]!.previousAttempt, 'crashed');
        assert.equal(t.alerts[0]!.newAttempt, t.runs[0]!.attempt);
        assert.ok((t.alerts[0]!.leaseAgeMs ?? 0) >= 61_000);
      });
      it('lets exactly one of two concurrent attempts overwrite the same stale lease', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        await seed(key, scheduled(1, { lock_req: 'crashed', lock_ts: new Date(Date.now() - 120_000) }));
        t.behave(() => new Promise((r) => setTimeout(r, 50)));
        const answers = await Promise.all([t.send(key, 1), t.send(key, 1), t.send(key, 1)]);
        assert.equal(t.runs.length, 1, `statuses ${answers.map((a) => a.status)}`);
        assert.equal(t.events.filter((e) => e.name === 'overwritten').length, 1);
      });
      it('fails the step when a stale lease was its last allowed attempt', async () => {
        const t = taskApp(s.store, { maxRetries: 3 });
        const key = newKey();
        await seed(key, scheduled(1, { lock_req: 'crashed', lock_try: 2, lock_ts: new Date(Date.now() - 120_000) }));
        const res = await t.send(key, 1);
        assert.equal(res.status, 200);
        assert.equal(t.runs.length, 0);
        const after = await stored(key);
        assert.equal(after.lock_state, StepState.failed);
        assert.equal(after.lock_try, 3);
        assert.equal(t.alerts.length, 1);
        assert.equal(t.alerts[0]!.reason, 'failure');
      });
    });

    describe('a failing handler', () => {
      it('answers 500, counts the retry and stores the error; at maxRetries answers 200 and fails the step for good', async () => {
        const t = taskApp(s.store, { maxRetries: 3 });
        const key = newKey();
        await seed(key, scheduled(1));
        t.behave(() => { throw new Error('card declined'); });
        const first = await t.send(key, 1);
        assert.equal(first.status, 500);
        let after = await stored(key);
        assert.equal(after.lock_try, 1);
        assert.equal(after.lock_req, '');
        assert.match(String(after.lock_err), /card declined/);
        assert.equal((await t.send(key, 1)).status, 500);
        assert.equal((await stored(key)).lock_try, 2);
        const last = await t.send(key, 1);
        assert.equal(last.status, 200);
        after = await stored(key);
        assert.equal(after.lock_try, 3);
        assert.equal(after.lock_state, StepState.failed);
        assert.match(String(after.lock_err), /card declined[\s\S]*at /, 'message and stack');
        assert.equal(t.alerts.length, 1);
        assert.equal(t.alerts[0]!.reason, 'failure');
        assert.equal(t.alerts[0]!.error?.message, 'card declined');
        assert.equal(t.alerts[0]!.retries, 3);
        assert.deepEqual(t.events.map((e) => e.name), ['acquired', 'released', 'acquired', 'released', 'acquired', 'failed']);
        // never again
        assert.equal((await t.send(key, 1)).status, 200);
        assert.equal(t.runs.length, 3);
      });
      it('fails the step at once on a PermanentError', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        await seed(key, scheduled(1));
        t.behave(() => { throw new PermanentError('address unknown'); });
        assert.equal((await t.send(key, 1)).status, 200);
        const after = await stored(key);
        assert.equal(after.lock_state, StepState.failed);
        assert.equal(after.lock_try, 1);
      });
      it('counts a throwing factory as a failed attempt', async () => {
        const t = taskApp(s.store);
        const app = express4();
        app.post('/bad-factory', t.locker.handle(() => {}, () => { throw new Error('bad data'); }));
        const key = newKey();
        await seed(key, scheduled(1));
        const res = await request(app).post('/bad-factory').set('x-test-auth', TEST_TOKEN).set('x-lock-key', t.locker.encodeKey(key)).set('x-lock-seq', '1');
        assert.equal(res.status, 500);
        assert.equal((await stored(key)).lock_try, 1);
      });
    });

    describe('leases while the handler runs', () => {
      it('renews the lease every leaseDuration / 3', async () => {
        // Long enough that a renewal on a loaded machine lands inside the proof window (leaseDuration minus a sixth).
        const t = taskApp(s.store, { leaseDuration: 1_500, leaseTimeout: 60_000 });
        const key = newKey();
        await seed(key, scheduled(1));
        const stamps: number[] = [];
        t.behave(async (ctx) => {
          for (let i = 0; i < 4; i++) {
            await new Promise((r) => setTimeout(r, 600));
            stamps.push(((await s.store.get(ctx.key))!.lock_ts as Date).getTime());
          }
        });
        assert.equal((await t.send(key, 1)).status, 200);
        assert.ok(new Set(stamps).size >= 3, `lock_ts moved: ${stamps.join(',')}`);
      });
      it('aborts the signal and answers 503 when another attempt takes the lease; the step is left to its holder', async () => {
        const t = taskApp(s.store, { leaseDuration: 300, leaseTimeout: 60_000 });
        const key = newKey();
        await seed(key, scheduled(1));
        let reason: unknown;
        t.behave(async (ctx) => {
          const current = (await s.store.get(ctx.key))!;
          await seed(ctx.key, { ...current, lock_req: 'thief', lock_ts: new Date() });
          await aborted(ctx.signal);
          reason = ctx.signal.reason;
          ctx.entity.count = 999; // must not be saved
        });
        const res = await t.send(key, 1);
        assert.equal(res.status, 503);
        assert.ok(reason instanceof LeaseLostError);
        const after = await stored(key);
        assert.equal(after.lock_req, 'thief');
        assert.equal(after.count, 1);
        assert.ok(t.events.some((e) => e.name === 'lost'));
      });
      it('a signal first read after the lease was lost is already aborted, with the reason (it is made on first use)', async () => {
        const t = taskApp(s.store, { leaseDuration: 300, leaseTimeout: 60_000 });
        const key = newKey();
        await seed(key, scheduled(1));
        let seen: { aborted: boolean; reason: unknown } | undefined;
        t.behave(async (ctx) => {
          // Listening before the thief writes: the renewal may find the thief before the write's answer is read.
          const lost = new Promise<void>((resolve) => t.locker.once('lost', () => resolve()));
          const current = (await s.store.get(ctx.key))!;
          await seed(ctx.key, { ...current, lock_req: 'thief', lock_ts: new Date() });
          // The next renewal (at 100 ms) finds the thief; only then does the handler look at its signal.
          await lost;
          seen = { aborted: ctx.signal.aborted, reason: ctx.signal.reason };
        });
        assert.equal((await t.send(key, 1)).status, 503);
        assert.equal(seen?.aborted, true);
        assert.ok(seen?.reason instanceof LeaseLostError, String(seen?.reason));
        assert.equal((await stored(key)).lock_req, 'thief');
      });
      it('fences ctx.complete(): a handler that lost its lease cannot finish the step', async () => {
        const t = taskApp(s.store);
        const key = newKey();
        await seed(key, scheduled(1));
        let thrown: unknown;
        t.behave(async (ctx) => {
          const current = (await s.store.get(ctx.key))!;
          await seed(ctx.key, { ...current, lock_req: 'thief' });
          try { await ctx.complete(); } catch (error) { thrown = error; throw error; }
        });
        assert.equal((await t.send(key, 1)).status, 503);
        assert.ok(thrown instanceof LeaseLostError);
        assert.equal((await stored(key)).lock_seq, 1);
      });
      it('aborts the signal with LeaseTimeoutError at leaseTimeout', async () => {
        // leaseTimeout = leaseDuration: a renewal (at 1 s) must land within the proof window (2.5 s) so the lease is not given up first.
        const t = taskApp(s.store, { leaseDuration: 3_000, leaseTimeout: 3_000 });
        const key = newKey();
        await seed(key, scheduled(1));
        let reason: unknown;
        t.behave(async (ctx) => {
          await aborted(ctx.signal);
          reason = ctx.signal.reason;
        });
        await t.send(key, 1);
        assert.ok(reason instanceof LeaseTimeoutError);
        assert.ok(t.events.some((e) => e.name === 'timedOut'));
        assert.ok(!t.events.some((e) => e.name === 'lost'), 'a timeout is not reported as a lost lease');
      });
    });

    describe('store outages', () => {
      it('answers 503 and changes nothing when taking the lease fails, and the step runs later', async () => {
        const faulty = faultyStore(s.store);
        const t = taskApp(faulty);
        const key = newKey();
        await seed(key, scheduled(1, { count: 5 }));
        faulty.failWrites = 1;
        const res = await t.send(key, 1);
        assert.equal(res.status, 503);
        assert.equal(t.runs.length, 0);
        const after = await stored(key);
        assert.equal(after.lock_req, '');
        assert.equal(after.lock_seq, 1);
        assert.equal(after.count, 5);
        assert.ok(t.logger.has('store unavailable'));
        assert.equal((await t.send(key, 1)).status, 200);
        assert.equal(t.runs.length, 1);
      });
      it('answers 503 when every read fails', async () => {
        const faulty = faultyStore(s.store);
        faulty.failReads = true;
        const t = taskApp(faulty);
        const res = await t.send(newKey(), 1);
        assert.equal(res.status, 503);
        assert.equal(res.headers['retry-after'], '1');
      });
    });
  });
}

/** A store that counts every call, to prove a request never reached it. */
function counting(inner: Store): Store & { calls: number } {
  const counted = {
    calls: 0,
    transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> { counted.calls++; return inner.transaction(fn); },
    get(key: Key) { counted.calls++; return inner.get(key); },
    read(key: Key) { counted.calls++; return inner.read(key); },
    replaceIfUnchanged(key: Key, snapshot: Snapshot, props: Properties, excludes: readonly string[]) {
      counted.calls++;
      return inner.replaceIfUnchanged(key, snapshot, props, excludes);
    },
    listDue(now: Date, limit: number) { counted.calls++; return inner.listDue(now, limit); },
    projectId: inner.projectId,
  };
  return counted;
}

function touches(store: Store): number {
  return (store as Store & { calls: number }).calls;
}

/** A store whose next writes (transactions and compare-and-swaps) or reads fail as an outage would. */
function faultyStore(inner: Store): Store & { failWrites: number; failReads: boolean } {
  const outage = (): StoreUnavailableError => new StoreUnavailableError('simulated outage: connection refused');
  const faulty = {
    failWrites: 0,
    failReads: false,
    async transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
      if (faulty.failWrites > 0) { faulty.failWrites--; throw outage(); }
      return inner.transaction(fn);
    },
    async replaceIfUnchanged(key: Key, snapshot: Snapshot, props: Properties, excludes: readonly string[]) {
      if (faulty.failWrites > 0) { faulty.failWrites--; throw outage(); }
      return inner.replaceIfUnchanged(key, snapshot, props, excludes);
    },
    async get(key: Key) { if (faulty.failReads) throw outage(); return inner.get(key); },
    async read(key: Key) { if (faulty.failReads) throw outage(); return inner.read(key); },
    listDue: (now: Date, limit: number) => inner.listDue(now, limit),
    projectId: inner.projectId,
  };
  return faulty;
}
