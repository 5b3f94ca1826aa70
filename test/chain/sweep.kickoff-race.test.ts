/**
 * A sweep beside a batch kickoff, on the Datastore emulator with conditional writes (as on
 * Datastore itself): `replaceMany` commits the ledger records first, then the entities. A sweep in
 * between sees a record whose entity is absent, a record it clears. Before the fix, a record
 * cleared while its entity was on its way was gone for good: the step's task, once lost, was never
 * re-delivered (seen in the fan-out kill test, whose first process drops the children's tasks).
 * The entity's commit is held at the seam (a recorded client, `datastore-spy.ts`), and the sweep's
 * read made slow (a store wrapper), so each order happens on purpose.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import { Locker } from '../../src/locker';
import type { Properties, Store } from '../../src/types';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { spyClient, type SentRpc } from '../support/datastore-spy';
import { KeptTasks } from '../support/kept-tasks';

const datastore = legacyDatastore();
const LEDGER_KIND = 'LockerOutbox';
const HOUR = 3_600_000;

/** A store whose `get` answers only once `after(key, props)` resolved, with what it read before. */
function slowReads(inner: Store, after: (key: Key, props: Properties | undefined) => Promise<void>): Store {
  return new Proxy(inner, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property === 'get') {
        return async (key: Key): Promise<Properties | undefined> => {
          const props = await target.get(key);
          await after(key, props);
          return props;
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The ledger records in `namespace`, read straight from the emulator. */
async function records(namespace: string): Promise<number> {
  const [rows] = await datastore.runQuery(datastore.createQuery(namespace, LEDGER_KIND));
  return rows.length;
}

/** A kickoff Locker whose first entity commit (an upsert at a base version) waits for `release()`. */
function heldKickoff(namespace: string) {
  let reached!: () => void;
  let release!: () => void;
  const atEntities = new Promise<void>((resolve) => { reached = resolve; });
  const released = new Promise<void>((resolve) => { release = resolve; });
  let held = false;
  const spy = spyClient(datastore, {
    keepRequests: false,
    hold: (method, request: SentRpc['request']) => {
      if (held || method !== 'commit' || !request.mutations?.some((m) => m.baseVersion !== undefined)) return undefined;
      held = true;
      reached();
      return released;
    },
  });
  const store = new DatastoreStore(datastore, { namespaces: [namespace], client: spy.client, conditionalWrites: true, beginWithFirstRead: true });
  const queue = new KeptTasks();
  const locker = new Locker({ store, queue, authenticate: false, leaseDuration: 60_000, stallAfter: 60_000 });
  return { locker, queue, atEntities, release, close: () => spy.close() };
}

/** A sweeping Locker an hour ahead (every record is due), on `store`. */
function sweeper(store: Store) {
  const queue = new KeptTasks();
  const now = Date.now() + HOUR;
  return { locker: new Locker({ store, queue, authenticate: false, leaseDuration: 60_000, stallAfter: 60_000, clock: () => now }), queue };
}

describe('a sweep beside a batch kickoff (Datastore emulator, conditional writes)', () => {
  it('a record the sweep clears before its entity is written is put back by the kickoff: its lost task is re-delivered', async () => {
    const namespace = uniqueNamespace('kickoff-race');
    const key = datastore.key({ namespace, path: ['Race', 'cleared-first'] });
    const k = heldKickoff(namespace);
    try {
      const kickoff = k.locker.scheduleMany([{ key, entity: { n: 1 }, path: '/step' }]);
      await k.atEntities; // the record committed, the entity not yet
      assert.equal(await records(namespace), 1);
      const s = sweeper(new DatastoreStore(datastore, { namespaces: [namespace], conditionalWrites: true }));
      const first = await s.locker.sweep();
      assert.equal(first.cleared, 1, 'the entity is absent: the sweep clears the record');
      assert.equal(await records(namespace), 0);
      k.release();
      const result = await kickoff;
      assert.equal(result.started, 1);
      assert.equal(k.queue.tasks.length, 1, 'its task was created (and is never delivered: lost)');
      assert.equal(await records(namespace), 1, 'the kickoff put the record back');
      const again = await s.locker.sweep();
      assert.equal(again.resent, 1, 'the lost task is re-delivered');
      assert.equal(s.queue.tasks[0]?.path, '/step');
    } finally {
      k.release();
      await k.close();
    }
  });

  it('a sweep that read the entity absent before it was written keeps the record: its clearing reads again', async () => {
    const namespace = uniqueNamespace('kickoff-race');
    const key = datastore.key({ namespace, path: ['Race', 'read-first'] });
    const k = heldKickoff(namespace);
    try {
      const kickoff = k.locker.scheduleMany([{ key, entity: { n: 1 }, path: '/step' }]);
      await k.atEntities;
      let stale = false;
      // The sweep's read of the entity finds it absent; its answer arrives only after the kickoff
      // wrote the entity and returned (record checked and all).
      const store = slowReads(new DatastoreStore(datastore, { namespaces: [namespace], conditionalWrites: true }), async (read, props) => {
        if (read.path.join('/') !== key.path.join('/') || stale) return;
        stale = true;
        assert.equal(props, undefined, 'read before the entity was written');
        k.release();
        assert.equal((await kickoff).started, 1);
      });
      const s = sweeper(store);
      const first = await s.locker.sweep();
      assert.ok(stale, 'the sweep read the entity while absent');
      assert.deepEqual([first.cleared, first.waiting], [0, 1], 'read again with the record, the step is live: kept');
      assert.equal(await records(namespace), 1);
      const again = await s.locker.sweep();
      assert.equal(again.resent, 1, 'the lost task is re-delivered');
    } finally {
      k.release();
      await k.close();
    }
  });
});
