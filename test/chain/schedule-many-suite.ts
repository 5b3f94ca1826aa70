/**
 * `locker.scheduleMany()` against a real store: run by schedule-many.*.test.ts on the in-memory
 * store and on both Datastore emulators. Chains run through the local dispatcher (real HTTP) with
 * the sweep on a timer (`support/chain-rig.ts`).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { chainRig, runCounts } from '../support/chain-rig';
import { RecordingQueue } from '../support/recording-queue';
import { keys } from '../support/task-app';
import { Locker } from '../../src/locker';
import { keyPath } from '../../src/keys/key-codec';
import { kickoffChainId } from '../../src/rules/kickoff-plan';
import { keyString } from '../../src/keys/keys';
import { taskName } from '../../src/rules/ledger-record';
import { StoreRejectedError } from '../../src/errors/errors';
import { StepState, type ConditionalWrite, type Properties, type Store } from '../../src/types';
import type { KickoffItem, KickoffProgress } from '../../src/chain/schedule-many-types';
import type { StoreUnderTest } from '../step/handle-suite';

/** Chains in the big case by default (the emulators' files run 1,000: eight rounds of BATCH all the same; 5,000 are killed in schedule-many.kill.test.ts). */
const ITEMS = 2_000;
const STEPS = 2;
let counter = 0;

/** Reads every key, 1,000 at a time (with `readMany` where the store has it). */
export async function readAll(store: Store, all: readonly Key[]): Promise<(Properties | undefined)[]> {
  const out: (Properties | undefined)[] = [];
  for (let start = 0; start < all.length; start += 1_000) {
    const part = all.slice(start, start + 1_000);
    if (store.readMany) out.push(...(await store.readMany(part)).map((r) => r.properties));
    else out.push(...(await Promise.all(part.map((k) => store.get(k)))));
  }
  return out;
}

/** Resolves once every key's chain is complete; fails after `limitMs` saying how many are not. */
async function allComplete(store: Store, all: readonly Key[], limitMs = 180_000): Promise<(Properties | undefined)[]> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const props = await readAll(store, all);
    const open = props.filter((p) => p?.lock_state !== StepState.complete);
    if (open.length === 0) return props;
    if (Date.now() > deadline) throw new Error(`${open.length} of ${all.length} chains not complete after ${limitMs} ms, e.g. ${JSON.stringify(open[0])}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A step of another chain, scheduled (or, with `running`, held by an attempt), written by hand. */
function busyStep(i: number, running: boolean): Properties {
  return { n: i, lock_ts: new Date(), lock_req: running ? 'another-attempt' : '', lock_seq: 3, lock_try: 0, lock_state: StepState.scheduled, lock_chain: 'other-chain', lock_task: `other-${i}` };
}

export function scheduleManySuite(name: string, open: () => Promise<StoreUnderTest>, { chains = ITEMS }: { chains?: number } = {}): void {
  describe(`locker.scheduleMany() on ${name}`, () => {
    let s: StoreUnderTest;
    before(async () => { s = await open(); });
    after(async () => { await s.close?.(); });
    const newKeys = (prefix: string, n: number): Key[] => {
      counter += 1;
      return Array.from({ length: n }, (_, i) => keys.key({ namespace: s.namespace, path: ['Invoice', `${prefix}${counter}-${i}`] }));
    };
    const seed = async (key: Key, props: Properties): Promise<void> => {
      await s.store.transaction(async (tx) => { tx.put(key, props, []); });
    };

    it(`starts ${chains} chains, 10 % already busy and 1 % refused by the store: every started chain completes, each step once`, { timeout: 300_000 }, async () => {
      const all = newKeys('bulk', chains);
      const busy = new Set<number>();
      const refused = new Set<number>();
      for (let i = 0; i < chains; i++) {
        if (i % 10 === 3) busy.add(i);
        else if (i % 100 === 7) refused.add(i);
      }
      for (const group of chunk([...busy], 50)) await Promise.all(group.map((i) => seed(all[i]!, busyStep(i, i % 20 === 3))));
      const before = await readAll(s.store, all);
      const rig = await chainRig({ store: s.store, steps: STEPS });
      try {
        const items: KickoffItem[] = all.map((key, i) => ({
          key, path: '/step', payload: { i },
          // A bigint is a value no store can hold: the store refuses the entity (StoreRejectedError).
          entity: refused.has(i) ? { n: i, amount: 10n } : { n: i, customer: `c-${i}` },
        }));
        const progress: KickoffProgress[] = [];
        const result = await rig.locker.scheduleMany(items, { kickoffId: 'invoices-1', onProgress: (p) => progress.push(p) });

        assert.equal(result.kickoffId, 'invoices-1');
        assert.equal(result.results.length, chains);
        assert.deepEqual([result.started, result.busy, result.failed], [chains - busy.size - refused.size, busy.size, refused.size]);
        result.results.forEach((r, i) => {
          assert.equal(keyString(r.key), keyString(all[i]!), `result ${i} is for item ${i}`);
          if (busy.has(i)) assert.deepEqual(r.status === 'busy' && [r.seq, r.running], [3, i % 20 === 3], `item ${i} is busy at step 3`);
          else if (refused.has(i)) {
            assert.ok(r.status === 'failed' && r.error instanceof StoreRejectedError, `item ${i} failed with StoreRejectedError: ${JSON.stringify(r)}`);
          } else assert.deepEqual(r.status === 'started' && [r.seq, r.sent, r.resumed], [1, true, false], `item ${i} started and its task was sent`);
        });
        assert.ok(progress.length >= 2, 'progress was reported more than once');
        assert.deepEqual(progress.at(-1), { total: chains, done: chains, started: result.started, busy: busy.size, failed: refused.size });
        for (let i = 1; i < progress.length; i++) assert.ok(progress[i]!.done >= progress[i - 1]!.done, 'progress never goes back');

        const startedKeys = all.filter((_, i) => !busy.has(i) && !refused.has(i));
        const done = await allComplete(s.store, startedKeys);
        startedKeys.forEach((key, j) => {
          assert.equal(done[j]!.lock_seq, STEPS + 1, `${keyPath(key)} ran ${STEPS} steps of one chain`);
          assert.equal(done[j]!.lock_chain, kickoffChainId('invoices-1', keyString(key)));
          assert.equal(typeof done[j]!.customer, 'string', 'the entity was saved with the chain');
        });
        await rig.idle();
        const counts = runCounts(rig.runs);
        for (const key of startedKeys) {
          for (let seq = 1; seq <= STEPS; seq++) assert.equal(counts.get(`${keyPath(key)}#${seq}`), 1, `${keyPath(key)} step ${seq} ran once`);
        }
        assert.equal(counts.size, startedKeys.length * STEPS, 'no other step ran');

      } finally {
        await rig.close();
      }
      const after = await readAll(s.store, all);
      for (const i of busy) assert.deepEqual(after[i], before[i], `busy entity ${i} is unchanged`);
      for (const i of refused) assert.equal(after[i], undefined, `refused entity ${i} was not written`);
      const records = await s.store.listDue(new Date(Date.now() + 86_400_000), 10_000);
      const ours = new Set(all.map((k) => keyString(k)));
      assert.deepEqual(records.records.filter((r) => ours.has(keyString(r.key))).map((r) => r.id), [], 'every ledger record was retired');
    });

    it('refuses a key given twice before writing anything', async () => {
      const all = newKeys('dup', 20);
      const queue = new RecordingQueue();
      const locker = new Locker({ store: s.store, queue, authenticate: false });
      const items: KickoffItem[] = all.map((key) => ({ key, entity: { a: 1 }, path: '/step' }));
      const again = keys.key({ namespace: s.namespace, path: ['Invoice', all[4]!.name!] });
      items.push({ key: again, entity: { a: 2 }, path: '/step' });
      await assert.rejects(locker.scheduleMany(items), (error: unknown) => {
        assert.ok(error instanceof TypeError);
        assert.match(error.message, /items 4 and 20 have the same key/);
        return true;
      });
      assert.deepEqual(await readAll(s.store, all), all.map(() => undefined), 'nothing was written');
      assert.equal(queue.tasks.length, 0, 'no task was created');
    });

    it('called again with the same kickoffId, starts nothing twice: its own chains are reported resumed, their tasks sent again under the same names', async () => {
      const all = newKeys('again', 30);
      const queue = new RecordingQueue();
      const locker = new Locker({ store: s.store, queue, authenticate: false });
      const items: KickoffItem[] = all.map((key, i) => ({ key, entity: { i }, path: '/step' }));
      const first = await locker.scheduleMany(items.slice(0, 20), { kickoffId: 'k-again' });
      assert.equal(first.started, 20);
      const firstTasks = queue.tasks.map((t) => t.name);
      // One of the first chains finished meanwhile: its entity is idle, but the chain was this kickoff's.
      const finished = all[0]!;
      await s.store.transaction(async (tx) => {
        const props = (await tx.get(finished))!;
        tx.put(finished, { ...props, lock_state: StepState.complete, lock_seq: 2, lock_task: undefined }, []);
      });
      const second = await locker.scheduleMany(items, { kickoffId: 'k-again' });
      assert.deepEqual([second.started, second.busy, second.failed], [30, 0, 0]);
      second.results.forEach((r, i) => {
        assert.equal(r.status, 'started');
        assert.equal(r.status === 'started' && r.resumed, i < 20, `item ${i} resumed: ${i < 20}`);
      });
      const r0 = second.results[0]!;
      assert.deepEqual(r0.status === 'started' && [r0.seq, r0.sent], [2, false], 'the finished chain is reported, not started again');
      const props = await readAll(s.store, all);
      assert.equal(props[0]!.lock_state, StepState.complete, 'the finished chain was not started again');
      for (let i = 1; i < 30; i++) {
        assert.equal(props[i]!.lock_seq, 1);
        assert.equal(props[i]!.lock_chain, kickoffChainId('k-again', keyString(all[i]!)));
      }
      const names = queue.tasks.map((t) => t.name);
      assert.deepEqual(names.slice(0, 20), firstTasks);
      assert.equal(names.length, 30, 'the resumed chains\' tasks were sent again under their own names (the queue de-duplicates them)');
      const third = await new Locker({ store: s.store, queue, authenticate: false }).scheduleMany(items, { kickoffId: 'another-run' });
      assert.deepEqual([third.started, third.busy], [1, 29], 'another kickoff finds the live chains busy and starts the finished one anew');
    });

    it('keeps each entity\'s compare-and-swap: an entity changed between the read and the write is decided again, its neighbours are written', async () => {
      const all = newKeys('race', 40);
      const queue = new RecordingQueue();
      const touched = all[5]!;
      const taken = all[9]!;
      const other = new Locker({ store: s.store, queue: new RecordingQueue(), authenticate: false });
      let raced = false;
      // A store whose batch write is preceded, once, by two other writers: one changes an entity's
      // own data, the other starts a chain on another entity with schedule().
      const inner = s.store;
      const racing: Store = {
        get projectId() { return inner.projectId; },
        transaction: (fn) => inner.transaction(fn),
        get: (key) => inner.get(key),
        read: (key) => inner.read(key),
        replaceIfUnchanged: (key, snapshot, props, excludes) => inner.replaceIfUnchanged(key, snapshot, props, excludes),
        listDue: (now, limit) => inner.listDue(now, limit),
        readMany: (keys) => inner.readMany!(keys),
        async replaceMany(writes: readonly ConditionalWrite[]) {
          if (!raced) {
            raced = true;
            await inner.transaction(async (tx) => { tx.put(touched, { note: 'written meanwhile' }, []); });
            await other.schedule(taken, { by: 'another' }, '/other');
          }
          return inner.replaceMany!(writes);
        },
      };
      const locker = new Locker({ store: racing, queue, authenticate: false });
      const result = await locker.scheduleMany(all.map((key, i) => ({ key, entity: { i }, path: '/step' })), { kickoffId: 'k-race' });
      assert.equal(raced, true);
      assert.deepEqual([result.started, result.busy, result.failed], [39, 1, 0]);
      assert.equal(result.results[9]!.status, 'busy');
      const props = await readAll(s.store, all);
      assert.equal(props[5]!.note, 'written meanwhile', 'the changed entity was read again, its new data kept');
      assert.equal(props[5]!.lock_chain, kickoffChainId('k-race', keyString(touched)));
      assert.equal(props[9]!.by, 'another', 'the entity another kickoff took is left to it');
      await locker.shutdown();
      const orphan = taskName(taken, kickoffChainId('k-race', keyString(taken)), 1);
      const records = await s.store.listDue(new Date(Date.now() + 86_400_000), 10_000);
      assert.equal(records.records.some((r) => r.id === orphan), false, 'the record written for the busy entity was removed');
      assert.equal(queue.tasks.length, 39);
    });
  });
}

function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
