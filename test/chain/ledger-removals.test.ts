/**
 * Finished steps' ledger records are removed in groups (`src/chain/ledger-removals.ts`): several
 * removals share one commit of at most 500, sent after a short delay, at once when the group is
 * full, and at once on shutdown; a removal that never lands (the process died first) leaves a
 * record that the sweep clears. On the in-memory store and the Datastore emulator, with the commits
 * counted by a store wrapper at the seam and the group's delay driven by a fake clock (unit) or
 * real ones (through `handle()`).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { MAX_REMOVALS, REMOVAL_DELAY_MS, LedgerRemovals, type LedgerRemovalSettings } from '../../src/chain/ledger-removals';
import { DatastoreStore } from '../../src/store/datastore/store';
import { MemoryStore } from '../../src/store/memory/store';
import { keyString } from '../../src/keys/keys';
import { StoreUnavailableError } from '../../src/errors/errors';
import type { LedgerNeeded, LedgerRecord, LedgerRef, Logger, Properties, Store } from '../../src/types';
import { StepState } from '../../src/types';
import { FakeTimers } from '../support/fake-timers';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { RecordingQueue } from '../support/recording-queue';
import { keys, MemoryLogger, taskApp } from '../support/task-app';
import type { Locker } from '../../src/locker';

interface Subject {
  name: string;
  open(): { store: Store; namespace: string | undefined };
}

const subjects: Subject[] = [
  { name: 'the in-memory store', open: () => ({ store: new MemoryStore(), namespace: undefined }) },
  {
    name: 'the Datastore emulator',
    open: () => {
      const namespace = uniqueNamespace('removals');
      return { store: new DatastoreStore(legacyDatastore(), { namespaces: [namespace] }), namespace };
    },
  },
];

/** One removal call the store was sent: its records (one for a transaction of its own), and which method. */
interface RemovalCall {
  method: 'transaction' | 'retireLedgerMany';
  records: number;
}

/** The store seen through a wrapper that counts every removal call; `hold` keeps them from landing until released. */
interface CountingStore extends Store {
  calls: RemovalCall[];
  /** For each record sent to `retireLedgerMany`: whether it was named with its version (the finished step read it). */
  versioned: boolean[];
  /** Resolves once every removal sent so far has landed (or failed). */
  settled(): Promise<void>;
  /** Removals fail (an outage), or go through. */
  mode: 'through' | 'fail';
  /** Removals sent from now on wait until `release()` (forever, if it is never called: a process that died). */
  hold(): void;
  release(): void;
}

function counting(inner: Store, options: { many: boolean } = { many: true }): CountingStore {
  const inFlight: Array<Promise<unknown>> = [];
  let gate: Promise<void> | undefined;
  let open = (): void => {};
  const send = <T>(call: RemovalCall, go: () => Promise<T>): Promise<T> => {
    w.calls.push(call);
    if (w.mode === 'fail') return Promise.reject(new StoreUnavailableError('simulated outage: connection refused'));
    const p = gate ? gate.then(go) : go();
    inFlight.push(p.catch(() => undefined));
    return p;
  };
  const w: CountingStore = {
    calls: [],
    versioned: [],
    mode: 'through',
    hold() { gate = new Promise<void>((resolve) => { open = resolve; }); },
    release() { open(); gate = undefined; },
    settled: async () => { await Promise.all(inFlight); },
    get projectId() { return inner.projectId; },
    // Without retireLedgerMany, a removal is a transaction of its own (the wrapper's only transactions here).
    transaction: (fn) => (options.many ? inner.transaction(fn) : send({ method: 'transaction', records: 1 }, () => inner.transaction(fn))),
    get: (key) => inner.get(key),
    read: (key) => inner.read(key),
    replaceIfUnchanged: (key, snapshot, props, excludes) => inner.replaceIfUnchanged(key, snapshot, props, excludes),
    listDue: (now, limit) => inner.listDue(now, limit),
    ...(inner.readWithLedger ? { readWithLedger: (key: Key, id: string) => inner.readWithLedger!(key, id) } : {}),
    ...(options.many ? { retireLedgerMany: (records: readonly LedgerRef[], needed: LedgerNeeded) => (w.versioned.push(...records.map((r) => r.version !== undefined)), send({ method: 'retireLedgerMany', records: records.length }, () => inner.retireLedgerMany!(records, needed))) } : {}),
  };
  return w;
}

/** What the removals are built with: the store (through the wrapper), its transactions, a logger. */
function settings(store: Store, logger: Logger = new MemoryLogger()): LedgerRemovalSettings {
  return { records: store, transact: (fn) => store.transaction(fn), logger };
}

const FAR = (): Date => new Date(Date.now() + 400 * 86_400_000);

/** Stores `count` ledger records, each of its own entity, in transactions of 25 (an emulator transaction spans at most 25 entity groups); returns them. */
async function records(store: Store, namespace: string | undefined, tag: string, count: number): Promise<LedgerRecord[]> {
  const now = new Date();
  const made = Array.from({ length: count }, (_, i): LedgerRecord => {
    const key: Key = keys.key({ namespace, path: ['Counter', `${tag}-${i}`] });
    const id = `${tag}-task-${i}`;
    return { id, key, seq: 1, chain: tag, path: '/task', body: '{}', createdAt: now, task: id, sends: 1, sentAt: now, failures: 0, due: now };
  });
  for (let i = 0; i < made.length; i += 25) {
    await store.transaction(async (tx) => { for (const r of made.slice(i, i + 25)) tx.putLedger(r); });
  }
  return made;
}

/** An entity's lock fields: step 1 in `state`, naming the ledger record `task`. */
function lockProps(state: StepState, task: string): Properties {
  return { lock_seq: 1, lock_state: state, lock_task: task, lock_chain: 'chain', lock_req: '', lock_try: 0, lock_ts: new Date() };
}

/** Which of `made` the store still lists. */
async function left(store: Store, made: readonly LedgerRecord[]): Promise<number> {
  const ours = new Set(made.map((r) => `${keyString(r.key)}#${r.id}`));
  const { records: due } = await store.listDue(FAR(), 10_000);
  return due.filter((r) => ours.has(`${keyString(r.key)}#${r.id}`)).length;
}

/** Keys for `count` steps of their own. */
function stepKeys(namespace: string | undefined, tag: string, count: number): Key[] {
  const stamp = `${tag}-${Date.now().toString(36)}`;
  return Array.from({ length: count }, (_, i) => keys.key({ namespace, path: ['Counter', `${stamp}-${i}`] }));
}

/** Schedules step 1 of each key (each with its ledger record); returns the records. */
async function scheduleAll(locker: Locker, store: Store, steps: readonly Key[]): Promise<LedgerRecord[]> {
  for (const key of steps) await locker.schedule(key, { count: 0 }, '/task');
  const ours = new Set(steps.map((k) => keyString(k)));
  const made = (await store.listDue(FAR(), 10_000)).records.filter((r) => ours.has(keyString(r.key)));
  assert.equal(made.length, steps.length, 'each scheduled step has its record');
  return made;
}

/** Records the removal calls so far name. */
function sent(store: CountingStore): number {
  return store.calls.reduce((n, c) => n + c.records, 0);
}

/** Waits, a turn of the event loop at a time (at most 2,000), until `check` holds. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
  assert.ok(check(), 'the condition came true');
}

for (const subject of subjects) {
  describe(`ledger removals grouped, on ${subject.name}`, () => {
    it('removals wait for their group, then go in one commit', async () => {
      const { store: inner, namespace } = subject.open();
      const store = counting(inner);
      const timers = new FakeTimers();
      const removals = new LedgerRemovals(settings(store), timers);
      const made = await records(inner, namespace, 'wait', 7);
      for (const r of made) removals.add(r.key, r.id);
      assert.deepEqual(store.calls, [], 'nothing is sent while the group waits');
      await timers.advance(REMOVAL_DELAY_MS - 1);
      assert.deepEqual(store.calls, [], `nothing is sent before ${REMOVAL_DELAY_MS} ms`);
      await timers.advance(1);
      assert.deepEqual(store.calls, [{ method: 'retireLedgerMany', records: 7 }], 'the seven removals go in one commit');
      await store.settled();
      assert.equal(await left(inner, made), 0, 'every record is gone');
      assert.deepEqual(timers.dueIn(), [], 'no timer is left');
    });

    it('a full group goes at once, in commits of at most 500', async () => {
      const { store: inner, namespace } = subject.open();
      const store = counting(inner);
      const timers = new FakeTimers();
      const removals = new LedgerRemovals(settings(store), timers);
      const made = await records(inner, namespace, 'full', 2 * MAX_REMOVALS + 200);
      for (const r of made) removals.add(r.key, r.id);
      assert.deepEqual(store.calls.map((c) => c.records), [MAX_REMOVALS, MAX_REMOVALS], 'two full groups went without waiting');
      assert.equal(removals.pending, 200);
      await timers.advance(REMOVAL_DELAY_MS);
      assert.deepEqual(store.calls.map((c) => c.records), [MAX_REMOVALS, MAX_REMOVALS, 200], 'the rest went after the delay');
      await store.settled();
      assert.equal(await left(inner, made), 0, 'every record is gone');
    });

    it('drain() (shutdown) sends what waits at once and waits for it', async () => {
      const { store: inner, namespace } = subject.open();
      const store = counting(inner);
      const timers = new FakeTimers();
      const removals = new LedgerRemovals(settings(store), timers);
      const made = await records(inner, namespace, 'drain', 3);
      for (const r of made) removals.add(r.key, r.id);
      await removals.drain(); // the fake clock never moves: only drain() can send the group
      assert.deepEqual(store.calls, [{ method: 'retireLedgerMany', records: 3 }]);
      assert.equal(await left(inner, made), 0, 'every record is gone once drain() resolved');
      assert.deepEqual(timers.dueIn(), [], 'the group\'s timer was cleared');
    });

    it('a store without retireLedgerMany removes each record of the group in a transaction of its own', async () => {
      const { store: inner, namespace } = subject.open();
      const store = counting(inner, { many: false });
      const timers = new FakeTimers();
      const removals = new LedgerRemovals(settings(store), timers);
      const made = await records(inner, namespace, 'single', 3);
      for (const r of made) removals.add(r.key, r.id);
      await timers.advance(REMOVAL_DELAY_MS);
      await removals.drain();
      assert.deepEqual(store.calls.map((c) => c.method), ['transaction', 'transaction', 'transaction']);
      assert.equal(await left(inner, made), 0);
    });

    for (const many of [true, false]) {
      it(`a removal keeps the record of the same step scheduled again before its group went (a restored backup, its step re-run)${many ? '' : ', also without retireLedgerMany'}`, async () => {
        const { store: inner, namespace } = subject.open();
        const store = counting(inner, { many });
        const timers = new FakeTimers();
        const removals = new LedgerRemovals(settings(store), timers);
        const [again, done] = await records(inner, namespace, many ? 'again' : 'again-tx', 2);
        // Both steps finished: their entities name their records, complete; their removals wait for the group.
        await inner.transaction(async (tx) => {
          tx.put(again!.key, lockProps(StepState.complete, again!.id), []);
          tx.put(done!.key, lockProps(StepState.complete, done!.id), []);
        });
        removals.add(again!.key, again!.id);
        removals.add(done!.key, done!.id);
        // Before the group goes, `again`'s step is scheduled again: a step's record id is the same each time.
        const rescheduled: LedgerRecord = { ...again!, createdAt: new Date(again!.createdAt.getTime() + 1_000), body: '{"again":true}' };
        await inner.transaction(async (tx) => { tx.put(again!.key, lockProps(StepState.scheduled, again!.id), []); tx.putLedger(rescheduled); });
        await timers.advance(REMOVAL_DELAY_MS);
        await removals.drain();
        assert.equal(sent(store), 2, 'both removals were sent');
        const kept = await inner.transaction((tx) => tx.getLedger(again!.key, again!.id));
        assert.equal(kept?.body, '{"again":true}', 'the record of the step scheduled again stays');
        assert.equal(await inner.transaction((tx) => tx.getLedger(done!.key, done!.id)), undefined, 'the finished step\'s record is removed');
      });
    }

    it('a group the store refuses is logged, and its records stay for the sweep', async () => {
      const { store: inner, namespace } = subject.open();
      const store = counting(inner);
      store.mode = 'fail';
      const logger = new MemoryLogger();
      const removals = new LedgerRemovals(settings(store, logger), new FakeTimers());
      const made = await records(inner, namespace, 'refused', 4);
      for (const r of made) removals.add(r.key, r.id);
      await removals.drain();
      assert.equal(store.calls.length, 1);
      const line = logger.lines.find((l) => l.message === 'ledger records not removed; the sweep clears them');
      assert.ok(line, 'the failure is logged');
      assert.equal(line.fields?.records, 4);
      assert.equal(await left(inner, made), 4, 'the records are still there');
    });

    it('through handle(): steps are answered before their removals land, and shutdown() sends the waiting ones and waits for them', async () => {
      const { store: inner, namespace } = subject.open();
      const store = counting(inner);
      const t = taskApp(store, { queue: new RecordingQueue() });
      const steps = stepKeys(namespace, 'handle', 6);
      const made = await scheduleAll(t.locker, inner, steps);
      store.hold();
      const answers = await Promise.all(steps.map((key) => t.send(key, 1)));
      assert.deepEqual(answers.map((a) => a.status), steps.map(() => 200), 'every step is answered while removals are held');
      let shutDown = false;
      const stopping = t.locker.shutdown({ timeoutMs: 5_000 }).then(() => { shutDown = true; });
      await until(() => sent(store) === steps.length);
      assert.ok(store.calls.every((c) => c.method === 'retireLedgerMany'), 'the records go in groups');
      assert.deepEqual(store.versioned, steps.map(() => true), 'each record is named with the version its step read it at: nothing is read to remove it');
      assert.ok(store.calls.length <= steps.length, `at most one commit per step, got ${store.calls.length}`);
      assert.equal(shutDown, false, 'shutdown() waits for the removals in flight');
      store.release();
      await stopping;
      assert.equal(await left(inner, made), 0, 'every record is gone once shutdown() resolved');
    });

    it('a process that dies before its removals land leaves the records, and the sweep clears them', async () => {
      const { store: inner, namespace } = subject.open();
      const store = counting(inner);
      const first = taskApp(store, { queue: new RecordingQueue() });
      const steps = stepKeys(namespace, 'crash', 5);
      const made = await scheduleAll(first.locker, inner, steps);
      store.hold(); // never released: the process is gone before any removal lands
      const answers = await Promise.all(steps.map((key) => first.send(key, 1)));
      assert.deepEqual(answers.map((a) => a.status), steps.map(() => 200));
      assert.equal(await left(inner, made), steps.length, 'the finished steps\' records are still there');
      // The restarted process, later: its sweep finds the records due and clears those of finished steps.
      const later = Date.now() + 86_400_000;
      const restarted = taskApp(inner, { queue: new RecordingQueue(), clock: () => later });
      const result = await restarted.locker.sweep();
      assert.equal(result.cleared, steps.length, `the sweep cleared the records: ${JSON.stringify(result)}`);
      assert.equal(result.resent, 0, 'no finished step is re-delivered');
      assert.equal(await left(inner, made), 0, 'no record is left');
      await restarted.locker.shutdown();
    });
  });
}
