/**
 * `handle()` under store faults (docs/design.md, section 12): each error class — transient
 * (`StoreUnavailableError`), contention past its retries (`ContentionError`), permanent for the
 * write (`StoreRejectedError`), configuration (`StoreConfigError`) — at each write an attempt
 * makes (take, renew, finish, release, fail, schedule) and at the read. Each case asserts the
 * handler's run count, the answer, the stored state and the log line. Run by faults.*.test.ts
 * against each store, through a wrapper with the store's own interface (test/support/faulty-store.ts).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { taskApp, keys, type TaskApp } from '../support/task-app';
import { FaultyStore, type StoreOp } from '../support/faulty-store';
import { RecordingQueue } from '../support/recording-queue';
import {
  ContentionError, LeaseLostError, LeaseTimeoutError, PermanentError, StoreConfigError, StoreRejectedError, StoreUnavailableError,
} from '../../src/errors/errors';
import type { LockerOptions } from '../../src/config/options';
import { StepState, type Properties } from '../../src/types';
import type { StoreUnderTest } from '../step/handle-suite';
import { aborted } from '../support/aborted';

let counter = 0;

/** The error classes, each as the store raises it. */
const CLASSES = {
  transient: () => new StoreUnavailableError('injected: 14 UNAVAILABLE: connection refused'),
  contention: () => new ContentionError('injected: 10 ABORTED: too much contention'),
  rejected: () => new StoreRejectedError('injected: 3 INVALID_ARGUMENT: entity is too big'),
  config: () => new StoreConfigError('injected: 7 PERMISSION_DENIED: grant roles/datastore.user to the service account'),
} as const;
type ErrorClass = keyof typeof CLASSES;

/**
 * Contention retried twice, quickly; a lease short enough that renewals happen within a test and
 * long enough that a renewal on a loaded machine lands inside the proof window (3 s − 0.5 s).
 */
const OPTIONS: Partial<LockerOptions> = { contention: { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 }, leaseDuration: 3_000, maxRetries: 3 };

export function faultSuite(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`handle() under store faults on ${name}`, { concurrency: 1 }, () => {
    let s: StoreUnderTest;
    before(async () => { s = await open(); });
    after(async () => { await s.close?.(); });

    const newKey = (): Key => keys.key({ namespace: s.namespace, path: ['Counter', `f${++counter}-${Date.now()}`] });
    const seed = async (key: Key, over: Properties = {}): Promise<void> => {
      await s.store.transaction(async (tx) => {
        tx.put(key, { count: 1, label: 'x', lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled, lock_chain: 'c1', ...over }, []);
      });
    };
    const stored = async (key: Key): Promise<Properties> => {
      const props = await s.store.get(key);
      assert.ok(props, 'entity exists');
      return props;
    };
    /** A fresh app on a faulty wrapper of the store, its entity seeded at step 1. */
    const setUp = async (over: Properties = {}, options: Partial<LockerOptions> = {}) => {
      const faulty = new FaultyStore(s.store);
      const queue = new RecordingQueue();
      const t = taskApp(faulty, { ...OPTIONS, queue, ...options });
      const key = newKey();
      await seed(key, over);
      return { faulty, queue, t, key };
    };
    /** Injected once for a class: contention is injected past its retries (3 for 2 attempts). */
    const times = (c: ErrorClass): number => (c === 'contention' ? 3 : 1);
    const held = (t: TaskApp, props: Properties): void => {
      assert.equal(props.lock_req, t.runs[0]!.attempt, 'the lease is still held');
      assert.equal(props.lock_seq, 1);
      assert.equal(props.count, 1, 'nothing the handler changed was saved');
    };
    const untouched = (props: Properties): void => {
      assert.equal(props.lock_req, '');
      assert.equal(props.lock_seq, 1);
      assert.equal(props.lock_try, 0);
      assert.equal(props.count, 1);
    };

    describe('the read', () => {
      for (const c of ['transient', 'contention'] as const) {
        it(`${c}: 503, the handler never runs, nothing changes`, async () => {
          const { faulty, t, key } = await setUp();
          faulty.inject({ op: 'read', error: CLASSES[c] });
          const res = await t.send(key, 1);
          assert.equal(res.status, 503);
          assert.equal(t.runs.length, 0);
          untouched(await stored(key));
          assert.ok(t.logger.has('store unavailable'));
        });
      }
      it('rejected: 500, the handler never runs, nothing changes', async () => {
        const { faulty, t, key } = await setUp();
        faulty.inject({ op: 'read', error: CLASSES.rejected });
        const res = await t.send(key, 1);
        assert.equal(res.status, 500);
        assert.equal(t.runs.length, 0);
        untouched(await stored(key));
        assert.ok(t.logger.has('the store refused the request; nothing changed'));
      });
      it('config: 503 and one error line saying what to fix, at most once a minute', async () => {
        const { faulty, t, key } = await setUp();
        faulty.inject({ op: 'read', error: CLASSES.config, times: 3 });
        for (let i = 0; i < 3; i++) assert.equal((await t.send(key, 1)).status, 503);
        assert.equal(t.runs.length, 0);
        untouched(await stored(key));
        const lines = t.logger.lines.filter((l) => l.message.includes('the store is not set up right'));
        assert.equal(lines.length, 1, 'logged once for three requests');
        assert.equal(lines[0]!.level, 'error');
        assert.match(lines[0]!.message, /grant roles\/datastore\.user/);
        assert.equal((await t.send(key, 1)).status, 200, 'once fixed, the step runs');
      });
    });

    describe('taking the lease', () => {
      for (const c of ['transient', 'config'] as const) {
        it(`${c}: 503, the handler never runs, nothing changes`, async () => {
          const { faulty, t, key } = await setUp();
          faulty.inject({ op: 'take', error: CLASSES[c] });
          assert.equal((await t.send(key, 1)).status, 503);
          assert.equal(t.runs.length, 0);
          untouched(await stored(key));
          assert.ok(t.logger.has(c === 'config' ? 'the store is not set up right' : 'store unavailable'));
        });
      }
      it('contention past its retries: 503, the handler never runs, nothing changes', async () => {
        const { faulty, t, key } = await setUp();
        faulty.inject({ op: 'take', error: CLASSES.contention, times: 2 });
        assert.equal((await t.send(key, 1)).status, 503);
        assert.equal(t.runs.length, 0);
        untouched(await stored(key));
        assert.ok(t.logger.has('store unavailable'));
      });
      it('rejected: 500, the handler never runs, nothing changes', async () => {
        const { faulty, t, key } = await setUp();
        faulty.inject({ op: 'take', error: CLASSES.rejected });
        assert.equal((await t.send(key, 1)).status, 500);
        assert.equal(t.runs.length, 0);
        untouched(await stored(key));
        assert.ok(t.logger.has('the store refused the request; nothing changed'));
      });
    });

    describe('renewing the lease', () => {
      for (const c of Object.keys(CLASSES) as ErrorClass[]) {
        it(`${c} once: logged, the next renewal holds the lease, the step finishes once`, async () => {
          const { faulty, t, key } = await setUp();
          const failing = c === 'contention' ? 2 : 1; // contention: both tries of one renewal
          faulty.inject({ op: 'renew', error: CLASSES[c], times: failing });
          t.behave(async (ctx) => {
            await faulty.until('renew', failing + 1);
            ctx.entity.count = 2;
          });
          assert.equal((await t.send(key, 1)).status, 200);
          assert.equal(t.runs.length, 1);
          const after = await stored(key);
          assert.equal(after.lock_state, StepState.complete);
          assert.equal(after.count, 2);
          assert.ok(faulty.count('renew', true) >= 1);
          assert.ok(t.logger.has('lease renewal failed'));
        });
      }
      it('failing for good: the signal aborts with LeaseLostError, later writes are refused, 503 and nothing saved', async () => {
        const { faulty, t, key } = await setUp();
        faulty.inject({ op: 'renew', error: CLASSES.transient, times: Infinity });
        let reason: unknown;
        let later: unknown;
        t.behave(async (ctx) => {
          await aborted(ctx.signal);
          reason = ctx.signal.reason;
          ctx.entity.count = 99;
          await ctx.complete().catch((e: unknown) => { later = e; });
        });
        assert.equal((await t.send(key, 1)).status, 503);
        assert.equal(t.runs.length, 1);
        assert.ok(reason instanceof LeaseLostError, 'the lease can no longer be proven held');
        assert.match((reason as Error).message, /no renewal succeeded/);
        assert.ok(later instanceof LeaseLostError, 'ctx.complete() is refused');
        assert.equal(faulty.count('finish'), 0, 'nothing was written after the lease was given up');
        held(t, await stored(key));
        assert.ok(t.events.some((e) => e.name === 'lost'));
        assert.ok(t.logger.has('lease given up'));
      });
    });

    describe('finishing the step (the handler returned)', () => {
      for (const c of ['transient', 'contention'] as const) {
        it(`${c}: retried under the live lease; 200, the handler ran once, the step is complete`, async () => {
          const { faulty, t, key } = await setUp();
          faulty.inject({ op: 'finish', error: CLASSES[c], times: times(c) });
          t.behave((ctx) => { ctx.entity.count = 2; });
          assert.equal((await t.send(key, 1)).status, 200);
          assert.equal(t.runs.length, 1);
          const after = await stored(key);
          assert.equal(after.lock_state, StepState.complete);
          assert.equal(after.lock_seq, 2);
          assert.equal(after.count, 2);
          assert.ok(t.logger.has('finish: the store failed; retrying under the live lease'));
        });
      }
      it('transient after the write applied (the answer lost): the retry finds the step finished; 200, once', async () => {
        const { faulty, t, key } = await setUp();
        faulty.inject({ op: 'finish', error: CLASSES.transient, applied: true });
        t.behave((ctx) => { ctx.entity.count = 2; });
        assert.equal((await t.send(key, 1)).status, 200);
        assert.equal(t.runs.length, 1);
        const after = await stored(key);
        assert.equal(after.lock_state, StepState.complete);
        assert.equal(after.count, 2);
        assert.ok(!t.logger.has('lease lost'));
        assert.equal((await t.send(key, 1)).status, 200, 'a duplicate is dropped');
        assert.equal(t.runs.length, 1);
      });
      it('transient for longer than the budget (half a lease): 503, the lease still held, renewed meanwhile', async () => {
        const { faulty, t, key } = await setUp();
        faulty.inject({ op: 'finish', error: CLASSES.transient, times: Infinity });
        t.behave((ctx) => { ctx.entity.count = 2; });
        assert.equal((await t.send(key, 1)).status, 503);
        assert.equal(t.runs.length, 1);
        held(t, await stored(key));
        assert.ok(faulty.count('finish', true) >= 2, 'retried');
        assert.ok(faulty.count('renew', false) >= 1, 'the lease was renewed while the finish was retried');
        assert.ok(t.logger.has('store unavailable'));
      });
      it('rejected: the changes are discarded and the step fails for good at once (200), alerted: the handler ran, it is never run again unalerted', async () => {
        const { faulty, t, key } = await setUp();
        faulty.inject({ op: 'finish', error: CLASSES.rejected, times: Infinity });
        t.behave((ctx) => { ctx.entity.count = 2; });
        assert.equal((await t.send(key, 1)).status, 200);
        assert.equal(t.runs.length, 1);
        const after = await stored(key);
        assert.equal(after.lock_req, '');
        assert.equal(after.lock_try, 1);
        assert.equal(after.lock_state, StepState.failed);
        assert.equal(after.count, 1, 'the changes were discarded');
        assert.match(String(after.lock_err), /the handler ran, but its result could not be stored.*injected: 3 INVALID_ARGUMENT/);
        assert.ok(t.logger.has('the handler ran, but its result cannot be stored'));
        assert.equal(faulty.count('finish'), 1, 'never retried as is');
        assert.equal(t.alerts.length, 1);
        assert.equal(t.alerts[0]!.reason, 'failure');
        assert.match(t.alerts[0]!.error?.message ?? '', /INVALID_ARGUMENT/);
        assert.equal((await t.send(key, 1)).status, 200, 'a re-delivery is dropped');
        assert.equal(t.runs.length, 1, 'the handler is not run again');
      });
      it('a value the entity cannot turn into properties: the step fails for good (200), alerted; never a held lease', async () => {
        const { t, key } = await setUp();
        t.behave((ctx) => {
          Object.assign(ctx.entity, { toProperties: () => { throw new TypeError('cannot store a Map'); } });
        });
        assert.equal((await t.send(key, 1)).status, 200);
        const after = await stored(key);
        assert.equal(after.lock_req, '');
        assert.equal(after.lock_try, 1);
        assert.equal(after.lock_state, StepState.failed);
        assert.match(String(after.lock_err), /cannot store a Map/);
        assert.equal(t.alerts.length, 1);
      });
      it('config: 503 and the error line; the lease is still held', async () => {
        const { faulty, t, key } = await setUp();
        faulty.inject({ op: 'finish', error: CLASSES.config });
        t.behave((ctx) => { ctx.entity.count = 2; });
        assert.equal((await t.send(key, 1)).status, 503);
        assert.equal(t.runs.length, 1);
        held(t, await stored(key));
        assert.ok(t.logger.has('the store is not set up right'));
      });
    });

    for (const op of ['release', 'fail'] as const) {
      describe(`${op === 'release' ? 'releasing the lease (the handler threw)' : 'failing the step (the handler threw PermanentError)'}`, () => {
        const thrown = () => (op === 'release' ? new Error('handler broke') : new PermanentError('handler gave up'));
        const answer = op === 'release' ? 500 : 200;
        const state = op === 'release' ? StepState.scheduled : StepState.failed;
        for (const c of ['transient', 'contention'] as const) {
          it(`${c}: retried under the live lease; ${answer}, the handler ran once`, async () => {
            const { faulty, t, key } = await setUp();
            faulty.inject({ op, error: CLASSES[c], times: times(c) });
            t.behave(() => { throw thrown(); });
            assert.equal((await t.send(key, 1)).status, answer);
            assert.equal(t.runs.length, 1);
            const after = await stored(key);
            assert.deepEqual([after.lock_req, after.lock_try, after.lock_state], ['', 1, state]);
            assert.ok(t.logger.has(`${op === 'fail' ? 'release' : op}: the store failed; retrying under the live lease`));
          });
        }
        it(`rejected: stored again with a shorter error; ${answer}`, async () => {
          const { faulty, t, key } = await setUp();
          faulty.inject({ op, error: CLASSES.rejected });
          t.behave(() => { throw thrown(); });
          assert.equal((await t.send(key, 1)).status, answer);
          const after = await stored(key);
          assert.deepEqual([after.lock_req, after.lock_try, after.lock_state], ['', 1, state]);
          assert.doesNotMatch(String(after.lock_err), /\n\s+at /, 'no stack: the short form');
          assert.match(String(after.lock_err), /handler (broke|gave up)/);
        });
        it('config: 503 and the error line; the lease is still held', async () => {
          const { faulty, t, key } = await setUp();
          faulty.inject({ op, error: CLASSES.config });
          t.behave(() => { throw thrown(); });
          assert.equal((await t.send(key, 1)).status, 503);
          assert.equal(t.runs.length, 1);
          held(t, await stored(key));
          assert.ok(t.logger.has('the store is not set up right'));
        });
      });
    }

    describe('scheduling the next step (ctx.schedule)', () => {
      const chains = (t: TaskApp) => t.behave(async (ctx) => { ctx.entity.count = 2; await ctx.schedule('/task'); });
      for (const c of ['transient', 'contention'] as const) {
        it(`${c}: retried under the live lease; 200, one task, the handler ran once`, async () => {
          const { faulty, queue, t, key } = await setUp();
          faulty.inject({ op: 'schedule', error: CLASSES[c], times: times(c) });
          chains(t);
          assert.equal((await t.send(key, 1)).status, 200);
          assert.equal(t.runs.length, 1);
          const after = await stored(key);
          assert.deepEqual([after.lock_seq, after.lock_state, after.count], [2, StepState.scheduled, 2]);
          assert.equal(queue.tasks.length, 1);
        });
      }
      it('transient for longer than the budget (the handler lets it through): 503, the lease still held, never released', async () => {
        const { faulty, queue, t, key } = await setUp();
        faulty.inject({ op: 'schedule', error: CLASSES.transient, times: Infinity });
        chains(t);
        assert.equal((await t.send(key, 1)).status, 503);
        assert.equal(t.runs.length, 1);
        const after = await stored(key);
        held(t, after);
        assert.equal(after.lock_try, 0, 'no failed attempt was counted: a release would run the handler again, unalerted');
        assert.equal(queue.tasks.length, 0);
        assert.ok(faulty.count('schedule', true) >= 2, 'retried');
        assert.ok(t.logger.has('store unavailable'));
        assert.ok(!t.logger.has('the step will be retried'));
      });
      it('transient after the commit applied: recognised, one task; 200, once', async () => {
        const { faulty, queue, t, key } = await setUp();
        faulty.inject({ op: 'schedule', error: CLASSES.transient, applied: true });
        chains(t);
        assert.equal((await t.send(key, 1)).status, 200);
        assert.equal(t.runs.length, 1);
        const after = await stored(key);
        assert.deepEqual([after.lock_seq, after.lock_state, after.count], [2, StepState.scheduled, 2]);
        assert.deepEqual(queue.tasks.map((task) => task.name), [after.lock_task]);
      });
      it('rejected (the handler lets it through): the changes discarded, the step failed for good (200), alerted, no task', async () => {
        const { faulty, queue, t, key } = await setUp();
        faulty.inject({ op: 'schedule', error: CLASSES.rejected });
        chains(t);
        assert.equal((await t.send(key, 1)).status, 200);
        const after = await stored(key);
        assert.deepEqual([after.lock_req, after.lock_seq, after.lock_try, after.count, after.lock_state], ['', 1, 1, 1, StepState.failed]);
        assert.match(String(after.lock_err), /the handler ran, but its result could not be stored.*INVALID_ARGUMENT/);
        assert.equal(queue.tasks.length, 0);
        assert.equal(t.alerts.filter((a) => a.reason === 'failure').length, 1);
      });
      it('config (the handler lets it through): 503 and the error line; nothing written', async () => {
        const { faulty, queue, t, key } = await setUp();
        faulty.inject({ op: 'schedule', error: CLASSES.config });
        chains(t);
        assert.equal((await t.send(key, 1)).status, 503);
        held(t, await stored(key));
        assert.equal(queue.tasks.length, 0);
        assert.ok(t.logger.has('the store is not set up right'));
      });
    });

    describe('after a failed schedule() or complete() the handler survives', () => {
      for (const op of ['schedule', 'finish'] as const) {
        it(`${op === 'finish' ? 'complete' : op}(): renewal is back on, and the handler can finish the step`, async () => {
          const { faulty, t, key } = await setUp();
          faulty.inject({ op, error: CLASSES.rejected });
          let caught: unknown;
          t.behave(async (ctx) => {
            await (op === 'schedule' ? ctx.schedule('/task') : ctx.complete()).catch((e: unknown) => { caught = e; });
            const renewals = faulty.count('renew');
            await faulty.until('renew', renewals + 1);
            ctx.entity.count = 3;
          });
          assert.equal((await t.send(key, 1)).status, 200);
          assert.ok(caught instanceof StoreRejectedError);
          const after = await stored(key);
          assert.deepEqual([after.lock_state, after.count], [StepState.complete, 3]);
        });
      }
      it('the leaseTimeout clock is back on too', async () => {
        const { faulty, t, key } = await setUp({}, { leaseTimeout: 3_000 });
        faulty.inject({ op: 'finish', error: CLASSES.rejected });
        let reason: unknown;
        t.behave(async (ctx) => {
          await ctx.complete().catch(() => {});
          await aborted(ctx.signal);
          reason = ctx.signal.reason;
        });
        await t.send(key, 1);
        assert.ok(reason instanceof LeaseTimeoutError);
      });
    });
  });
}

export type { StoreOp };
