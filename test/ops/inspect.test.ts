// locker.inspect(): steps listed by state (by indexed queries on lock_state and lock_ts) and one
// entity's detail, on the memory store and both emulators, with a manual clock.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import { DatastoreStore } from '../../src/store/datastore/store';
import { MemoryStore } from '../../src/store/memory/store';
import { InspectState } from '../../src/ops/inspect/step-view';
import { StepState, type Properties, type Store } from '../../src/types';
import { firestoreDatastore, legacyDatastore, uniqueNamespace } from '../support/emulator';

const NOW = Date.parse('2032-03-04T05:06:07.000Z');
const ago = (ms: number) => new Date(NOW - ms);
const MIN = 60_000;
const STACK = 'Error: card declined\n    at charge (/srv/app/charge.ts:10:5)\n    at step (/srv/app/step.ts:3:1)';

function lock(state: string, ageMs: number, extra: Properties = {}): Properties {
  return { lock_ts: ago(ageMs), lock_req: '', lock_seq: 2, lock_try: 0, lock_state: state, lock_chain: 'chain-1', lock_task: 'task-2', ...extra };
}

/** One entity of each state, named for it; leaseDuration 1 min, stallAfter 5 min. */
const FIXTURE: Record<string, Properties> = {
  failed: { total: 7, ...lock(StepState.failed, 20 * MIN, { lock_try: 3, lock_err: STACK, lock_alerts: ['failure:2'] }) },
  stale: lock(StepState.scheduled, 2 * MIN, { lock_req: 'attempt-crashed', lock_try: 1 }),
  staleStalled: lock(StepState.scheduled, 9 * MIN, { lock_req: 'attempt-hung' }),
  stalled: lock(StepState.scheduled, 6 * MIN),
  running: lock(StepState.scheduled, 10_000, { lock_req: 'attempt-live' }),
  running2: lock(StepState.scheduled, 20_000, { lock_req: 'attempt-live-2' }),
  scheduled: lock(StepState.scheduled, 30_000),
  complete: lock(StepState.complete, 40 * MIN, { lock_seq: 5 }),
};

function suite(name: string, makeStore: () => Store): void {
  describe(`locker.inspect() on ${name}`, () => {
    const namespace = uniqueNamespace('inspect');
    const store = makeStore();
    const locker = new Locker({ store, authenticate: false, clock: () => NOW, leaseDuration: MIN, stallAfter: 5 * MIN, maxRetries: 3 });
    const inspector = locker.inspect();
    const key = (name: string) => new Key({ namespace, path: ['Order', name] });
    const seeded = store.transaction(async (tx) => {
      for (const [name, props] of Object.entries(FIXTURE)) tx.put(key(name), props, UNINDEXED_LOCK_FIELDS);
      tx.put(new Key({ namespace, path: ['Other', 'failed'] }), lock(StepState.failed, MIN), UNINDEXED_LOCK_FIELDS);
      // The failed step's ledger record: re-sent once, one failed re-delivery since, due in 3 min.
      tx.putLedger({
        id: 'task-2', key: key('failed'), seq: 2, chain: 'chain-1', path: '/charge', body: '{"total":7}', createdAt: ago(30 * MIN),
        task: 'task-2-s2-0a1b2c', sends: 2, sentAt: ago(25 * MIN), failures: 1, due: new Date(NOW + 3 * MIN),
      });
    });
    const names = async (state: InspectState, order?: 'oldest' | 'newest') =>
      (await seeded, (await inspector.list({ state, kind: 'Order', namespace, order })).steps.map((s) => String(s.key.name)));

    it('lists each state, oldest first by default, newest first when asked', async () => {
      assert.deepEqual(await names(InspectState.failed), ['failed']);
      assert.deepEqual(await names(InspectState.complete), ['complete']);
      assert.deepEqual(await names(InspectState.running), ['running2', 'running']);
      assert.deepEqual(await names(InspectState.running, 'newest'), ['running', 'running2']);
      assert.deepEqual(await names(InspectState.scheduled), ['scheduled']);
      assert.deepEqual(await names(InspectState.stale), ['staleStalled', 'stale']);
      assert.deepEqual(await names(InspectState.stalled), ['staleStalled', 'stalled']);
    });

    it('marks and ages each step', async () => {
      await seeded;
      const [stale] = (await inspector.list({ state: InspectState.stale, kind: 'Order', namespace, order: 'newest', limit: 1 })).steps;
      assert.equal(stale!.state, InspectState.stale);
      assert.equal(stale!.staleLease, true);
      assert.equal(stale!.stalled, false);
      assert.equal(stale!.holder, 'attempt-crashed');
      assert.equal(stale!.leaseAgeMs, 2 * MIN);
      assert.equal(stale!.lastProgressAgeMs, 2 * MIN);
      assert.equal(stale!.encodedKey, locker.encodeKey(key('stale')));
      const [both] = (await inspector.list({ state: InspectState.stalled, kind: 'Order', namespace, limit: 1 })).steps;
      assert.equal(both!.state, InspectState.stalled);
      assert.equal(both!.staleLease, true);
      assert.equal(both!.stalled, true);
      const [failed] = (await inspector.list({ state: InspectState.failed, kind: 'Order', namespace })).steps;
      assert.equal(failed!.errorMessage, 'Error: card declined');
      assert.equal(failed!.tries, 3);
      assert.deepEqual(failed!.properties, { total: 7 });
      assert.equal(failed!.holder, undefined);
    });

    it('pages with a cursor: every step once', async () => {
      await seeded;
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await inspector.list({ state: InspectState.stalled, kind: 'Order', namespace, limit: 1, ...(cursor ? { cursor } : {}) });
        seen.push(...page.steps.map((s) => String(s.key.name)));
        cursor = page.cursor;
        pages += 1;
      } while (cursor && pages < 10);
      assert.deepEqual(seen, ['staleStalled', 'stalled']);
    });

    it('shows one entity in detail: seq, chain, tries, lease, progress, error with its stack, task, alerts, ledger record, started', async () => {
      await seeded;
      const failed = await inspector.step(key('failed'));
      assert.ok(failed);
      assert.equal(failed.state, InspectState.failed);
      assert.equal(failed.seq, 2);
      assert.equal(failed.chain, 'chain-1');
      assert.equal(failed.tries, 3);
      assert.equal(failed.maxRetries, 3);
      assert.equal(failed.task, 'task-2');
      assert.deepEqual(failed.alerts, ['failure:2']);
      assert.deepEqual(failed.error, { message: 'Error: card declined', stack: STACK });
      assert.equal(failed.lastProgressAt?.getTime(), NOW - 20 * MIN);
      assert.equal(failed.startedAt?.getTime(), NOW - 30 * MIN, 'started: when the step was scheduled (its ledger record committed)');
      assert.equal(failed.startedAgeMs, 30 * MIN);
      assert.deepEqual(failed.ledger, {
        id: 'task-2', task: 'task-2-s2-0a1b2c', sends: 2, sentAt: ago(25 * MIN), sentAgeMs: 25 * MIN, failures: 1,
        due: new Date(NOW + 3 * MIN), dueInMs: 3 * MIN, createdAt: ago(30 * MIN), path: '/charge', bodyBytes: 11,
      });
      // Another entity whose lock_task names the same id does not borrow the record (it is keyed to its own entity).
      const stalled = await inspector.step(key('stalled'));
      assert.equal(stalled?.ledger, undefined);
      assert.equal(stalled?.startedAt, undefined);
      const running = await inspector.step(key('running'));
      assert.equal(running?.state, InspectState.running);
      assert.equal(running?.holder, 'attempt-live');
      assert.equal(running?.leaseAgeMs, 10_000);
      assert.equal(await inspector.step(key('missing')), undefined);
    });

    it('refuses a bad list with a RangeError', async () => {
      await assert.rejects(inspector.list({ state: 'lost' as InspectState, kind: 'Order' }), RangeError);
      await assert.rejects(inspector.list({ state: InspectState.failed, kind: 'Order', limit: 0 }), RangeError);
      await assert.rejects(inspector.list({ state: InspectState.failed, kind: 'Order', cursor: 'not-a-cursor' }), RangeError);
    });
  });
}

suite('the memory store', () => new MemoryStore());
suite('the Datastore emulator', () => new DatastoreStore(legacyDatastore()));
suite('the Firestore emulator', () => new DatastoreStore(firestoreDatastore()));
