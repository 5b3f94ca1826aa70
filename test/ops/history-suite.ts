/**
 * A chain's history on the lock (`lock_hist`) against a real store: run by history.memory.test.ts
 * and history.datastore.test.ts (both emulators). Real steps are delivered as Cloud Tasks would
 * deliver them (test/support/kept-tasks.ts); a crashed attempt is the lock it leaves behind, written
 * by the `take` transition itself; store calls are counted by a wrapper (test/support/counting-calls.ts).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { Counter, keys, taskApp, type TaskApp } from '../support/task-app';
import { KeptTasks, deliver } from '../support/kept-tasks';
import { countingStore } from '../support/counting-store';
import { PermanentError } from '../../src/errors/errors';
import { readLock, writeLock } from '../../src/rules/lock-fields';
import { take } from '../../src/rules/transitions';
import { HISTORY_MAX_BYTES, HISTORY_STEPS, ROUTE_MAX_CHARS } from '../../src/rules/step-history';
import { StepState, type Store } from '../../src/types';

export interface HistoryStore {
  store: Store;
  namespace: string | undefined;
}

let counter = 0;

/** The calls a delivery makes itself: the removals of finished steps' records go in batches, in the background, when the batch is due. */
function hotPath(summary: string): string {
  return summary.split(', ').filter((call) => !call.startsWith('retireLedgerMany')).join(', ');
}

export function historySuite(name: string, open: () => Promise<HistoryStore>): void {
  describe(`a chain's history on ${name}`, () => {
    let s: HistoryStore;
    before(async () => { s = await open(); });
    after(() => {});

    const newKey = (): Key => keys.key({ namespace: s.namespace, path: ['Counter', `h${++counter}-${Date.now()}`] });

    /** An app whose handler chains `steps` steps on `route`, and the kept tasks. */
    function chainApp(store: Store, steps: number, route = '/task'): { t: TaskApp; kept: KeptTasks } {
      const kept = new KeptTasks();
      const t = taskApp(store, { queue: kept });
      const handler = t.locker.handle<Counter>(async (ctx) => {
        if (ctx.seq < steps) await ctx.schedule(route, {});
      }, (p) => new Counter(p));
      if (route !== '/task') t.app.post(route, handler);
      else t.behave(async (ctx) => { if (ctx.seq < steps) await ctx.schedule(route, {}); });
      return { t, kept };
    }

    async function runAll(t: TaskApp, kept: KeptTasks, count: number): Promise<void> {
      for (let i = 0; i < count; i++) {
        const res = await deliver(t, kept.last());
        assert.equal(res.status, 200, `step ${i + 1}: ${res.text}`);
      }
    }

    it(`a 12-step chain keeps its last ${HISTORY_STEPS} steps, newest first, with their outcomes`, async () => {
      const { t, kept } = chainApp(s.store, 12);
      const key = newKey();
      await t.locker.schedule(key, new Counter({}), '/task');
      await runAll(t, kept, 12);
      const detail = await t.locker.inspect().step(key);
      assert.ok(detail);
      assert.equal(detail.state, 'complete');
      assert.deepEqual(detail.history.map((e) => e.seq), [12, 11, 10, 9, 8, 7, 6, 5, 4, 3]);
      assert.deepEqual(detail.history.map((e) => e.outcome), ['complete', ...new Array(9).fill('next')]);
      for (const e of detail.history) {
        assert.equal(e.route, '/task');
        assert.equal(e.attempts, 1);
        assert.equal(e.takeover, false);
        assert.ok(e.startedAt instanceof Date && e.tookMs !== undefined && e.tookMs >= 0, `step ${e.seq} is timed`);
      }
      // Newest first: each step began no earlier than the one before it.
      for (let i = 1; i < detail.history.length; i++) assert.ok(detail.history[i - 1]!.startedAt!.getTime() >= detail.history[i]!.startedAt!.getTime());
    });

    it('a failed-then-retried step shows its attempts; one failed for good and retried by an operator shows both ends', async () => {
      const { t, kept } = chainApp(s.store, 1);
      const key = newKey();
      await t.locker.schedule(key, new Counter({}), '/task');
      let throws = 2;
      t.behave(() => { if (throws-- > 0) throw new Error('transient trouble'); });
      assert.equal((await deliver(t, kept.last())).status, 500);
      assert.equal((await deliver(t, kept.last())).status, 500);
      const running = await t.locker.inspect().step(key);
      assert.deepEqual(running?.history.map((e) => [e.seq, e.outcome]), [[1, 'running']], 'released for a retry: the entry stays open');
      assert.equal((await deliver(t, kept.last())).status, 200);
      const done = await t.locker.inspect().step(key);
      assert.deepEqual(done?.history.map((e) => [e.seq, e.outcome, e.attempts]), [[1, 'complete', 3]]);

      const other = newKey();
      const second = chainApp(s.store, 1);
      await second.t.locker.schedule(other, new Counter({}), '/task');
      second.t.behave(() => { throw new PermanentError('declined'); });
      assert.equal((await deliver(second.t, second.kept.last())).status, 200);
      second.t.behave(() => {});
      await second.t.locker.retry(other);
      assert.equal((await deliver(second.t, second.kept.last())).status, 200);
      const retried = await second.t.locker.inspect().step(other);
      assert.deepEqual(retried?.history.map((e) => [e.seq, e.outcome, e.attempts]), [[1, 'complete', 1], [1, 'failed', 1]]);
      assert.ok(!JSON.stringify(retried?.history).includes('declined'), 'the history holds no error text');
    });

    it('a takeover shows: the crashed attempt counted, the entry marked', async () => {
      const { t, kept } = chainApp(s.store, 1);
      const key = newKey();
      await t.locker.schedule(key, new Counter({}), '/task');
      // What an attempt that took the lease two leases ago and crashed leaves on the entity.
      const crashedAt = new Date(Date.now() - 120_000);
      await s.store.transaction(async (tx) => {
        const props = (await tx.get(key))!;
        tx.put(key, writeLock(props, take(readLock(props), { now: crashedAt, attempt: 'crashed-attempt', route: '/task' })), ['lock_hist', 'lock_req']);
      });
      assert.equal((await deliver(t, kept.last())).status, 200);
      const detail = await t.locker.inspect().step(key);
      assert.deepEqual(detail?.history.map((e) => [e.seq, e.outcome, e.attempts, e.takeover]), [[1, 'complete', 2, true]]);
      assert.ok(detail!.history[0]!.startedAt!.getTime() > crashedAt.getTime(), 'when the last attempt (the one that took over) began');
    });

    it('a cancelled step that never ran is an entry without route or times', async () => {
      const { t } = chainApp(s.store, 1);
      const key = newKey();
      await t.locker.schedule(key, new Counter({}), '/task');
      await t.locker.cancel(key);
      const detail = await t.locker.inspect().step(key);
      assert.deepEqual(detail?.history, [{ seq: 1, outcome: 'cancelled', route: '', attempts: 0, takeover: false }]);
    });

    it(`the bound holds with very long routes: ${HISTORY_STEPS} entries, routes cut to ${ROUTE_MAX_CHARS} characters, at most ${HISTORY_MAX_BYTES} bytes`, async () => {
      const route = `/${'r'.repeat(3_000)}`;
      const { t, kept } = chainApp(s.store, 12, route);
      const key = newKey();
      await t.locker.schedule(key, new Counter({}), route);
      await runAll(t, kept, 12);
      const stored = await s.store.get(key);
      assert.equal(stored?.lock_state, StepState.complete);
      const hist = stored!.lock_hist;
      assert.equal(typeof hist, 'string');
      assert.ok(Buffer.byteLength(hist as string) <= HISTORY_MAX_BYTES, `${Buffer.byteLength(hist as string)} bytes`);
      const detail = await t.locker.inspect().step(key);
      assert.equal(detail?.history.length, HISTORY_STEPS);
      for (const e of detail!.history) {
        assert.equal(e.route.length, ROUTE_MAX_CHARS);
        assert.ok(e.route.endsWith('...') && e.route.startsWith('/rrr'));
      }
    });

    it('store calls per step do not change as the history fills: a step with a full history costs what the first step costs', async () => {
      const store = countingStore(s.store);
      const { t, kept } = chainApp(store.store, 12);
      const key = newKey();
      await t.locker.schedule(key, new Counter({}), '/task');
      const perStep: string[] = [];
      for (let i = 0; i < 12; i++) {
        store.reset();
        assert.equal((await deliver(t, kept.last())).status, 200);
        perStep.push(hotPath(store.summary()));
      }
      // Steps 1 to 11 schedule the next (a transaction); step 12 finishes the chain (a compare-and-swap).
      assert.ok(perStep.slice(1, 11).every((calls) => calls === perStep[0]), `every scheduling step: ${perStep.join(' | ')}`);
      const single = chainApp(store.store, 1);
      const fresh = newKey();
      await single.t.locker.schedule(fresh, new Counter({}), '/task');
      store.reset();
      assert.equal((await deliver(single.t, single.kept.last())).status, 200);
      assert.equal(perStep[11], hotPath(store.summary()), 'the finish with ten steps kept costs what a finish with none costs');
    });

    it('an entity without the field, or with one this library did not write, reads as no history', async () => {
      const { t } = chainApp(s.store, 1);
      const go = newKey();
      const odd = newKey();
      await s.store.transaction(async (tx) => {
        tx.put(go, { count: 1, lock_ts: new Date(), lock_req: '', lock_seq: 4, lock_try: 0 }, []);
        tx.put(odd, { count: 1, lock_ts: new Date(), lock_req: '', lock_seq: 2, lock_try: 0, lock_state: StepState.complete, lock_hist: 'not a history\n1 x' }, ['lock_hist']);
      });
      assert.deepEqual((await t.locker.inspect().step(go))?.history, []);
      assert.deepEqual((await t.locker.inspect().step(odd))?.history, []);
    });

    it('throughput reads at most `cap` entities per kind, namespace and state, and says so when it cut', async () => {
      const { t, kept } = chainApp(s.store, 2);
      const ns = `tp-${++counter}-${Date.now()}`;
      const nsKeys = [0, 1, 2, 3, 4].map((i) => keys.key({ namespace: s.namespace === undefined ? ns : `${s.namespace}-${ns}`, path: ['Counter', `t${i}`] }));
      const namespace = nsKeys[0]!.namespace!;
      for (const key of nsKeys) {
        await t.locker.schedule(key, new Counter({}), '/task');
        await runAll(t, kept, 2);
      }
      const whole = await t.locker.inspect().throughput({ kinds: ['Counter'], namespaces: [namespace] });
      assert.equal(whole.finished, 10, 'two steps each of five chains');
      assert.deepEqual(whole.cut, []);
      assert.equal(whole.entities, 5);
      assert.equal(whole.buckets.reduce((n, b) => n + b.finished, 0), 10);
      const capped = await t.locker.inspect().throughput({ kinds: ['Counter'], namespaces: [namespace], cap: 3 });
      assert.equal(capped.entities, 3);
      assert.equal(capped.finished, 6);
      assert.deepEqual(capped.cut, ['entities']);
    });
  });
}
