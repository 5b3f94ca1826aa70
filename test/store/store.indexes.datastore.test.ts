// The indexes the operator's queries need, checked on a legacy Datastore emulator that requires
// them as production does (--require_indexes, test/support/strict-index-emulator.ts): with what
// `indexYaml()` prints, every list and count the status page and locker.inspect() send is answered;
// with no composite index at all, the counts that are equalities only (a state; a state within a
// run) and the search by chain id still are, served by the built-in indexes, and every query with a
// range or an order on lock_ts fails with a StoreConfigError that names the index it needs. (This
// emulator counts with keys-only queries: it has no count aggregation. Production's aggregation is
// served by the same indexes as the query it counts.)
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import { StoreConfigError } from '../../src/errors/errors';
import { indexYaml } from '../../src/store/index-yaml';
import { UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import { StepState, type LockCountQuery, type LockQuery } from '../../src/types';
import { strictIndexEmulator, type StrictEmulator } from '../support/strict-index-emulator';

const KIND = 'Ix';
const NOW = Date.parse('2031-01-01T00:00:00.000Z');
const since = new Date(NOW - 2_500);
const list = (extra: Partial<LockQuery> = {}): LockQuery => ({ kind: KIND, state: StepState.failed, order: 'asc', limit: 10, ...extra });
const count = (extra: Partial<LockCountQuery> = {}): LockCountQuery => ({ kind: KIND, state: StepState.failed, cap: 100, ...extra });

async function seeded(emulator: StrictEmulator): Promise<DatastoreStore> {
  const store = new DatastoreStore(emulator.datastore);
  await store.transaction(async (tx) => {
    for (let i = 0; i < 5; i++) {
      tx.put(new Key({ path: [KIND, `e${i}`] }), {
        lock_ts: new Date(NOW - i * 1_000), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.failed,
        lock_run: i < 3 ? 'run-1' : 'run-2', lock_chain: `chain-${i}`,
      }, UNINDEXED_LOCK_FIELDS);
    }
  });
  return store;
}

const names = (page: { entities: Array<{ key: Key }> }): string[] => page.entities.map((e) => String(e.key.name));

describe('the operator\'s queries on an emulator that requires indexes', { timeout: 120_000 }, () => {
  describe('with the indexes indexYaml() prints', () => {
    let emulator: StrictEmulator;
    let store: DatastoreStore;
    before(async () => {
      emulator = await strictIndexEmulator(indexYaml([KIND]));
      store = await seeded(emulator);
    });
    after(async () => { await emulator?.stop(); });

    it('answers every list: a state, either order, a range of lock_ts, one run', async () => {
      assert.deepEqual(names(await store.queryLocks(list())), ['e4', 'e3', 'e2', 'e1', 'e0']);
      assert.deepEqual(names(await store.queryLocks(list({ order: 'desc' }))), ['e0', 'e1', 'e2', 'e3', 'e4']);
      assert.deepEqual(names(await store.queryLocks(list({ tsFrom: since, tsBefore: new Date(NOW) }))), ['e2', 'e1']);
      assert.deepEqual(names(await store.queryLocks(list({ run: 'run-1' }))), ['e2', 'e1', 'e0']);
      assert.deepEqual(names(await store.queryLocks(list({ run: 'run-1', order: 'desc', tsBefore: new Date(NOW) }))), ['e1', 'e2']);
    });

    it('answers every count: a state, a range, a run, a run and a range', async () => {
      assert.deepEqual(await store.countLocks(count()), { count: 5, exact: true });
      assert.deepEqual(await store.countLocks(count({ tsBefore: since })), { count: 2, exact: true });
      assert.deepEqual(await store.countLocks(count({ run: 'run-1' })), { count: 3, exact: true });
      assert.deepEqual(await store.countLocks(count({ run: 'run-1', tsFrom: since })), { count: 3, exact: true });
      assert.deepEqual(await store.countLocks(count({ run: 'run-2', tsBefore: since })), { count: 2, exact: true });
    });
  });

  describe('with no composite index', () => {
    let emulator: StrictEmulator;
    let store: DatastoreStore;
    before(async () => {
      emulator = await strictIndexEmulator('indexes:\n');
      store = await seeded(emulator);
    });
    after(async () => { await emulator?.stop(); });

    it('still counts by equalities alone (a state, a state within a run) and finds a chain by its id', async () => {
      assert.deepEqual(await store.countLocks(count()), { count: 5, exact: true });
      assert.deepEqual(await store.countLocks(count({ run: 'run-2' })), { count: 2, exact: true });
      assert.deepEqual((await store.findKeys({ kind: KIND, namespace: '', property: 'lock_chain', equals: 'chain-3', limit: 10 })).map((k) => k.name), ['e3']);
    });

    it('refuses a list or a count with a range or an order on lock_ts, naming the index it needs', async () => {
      const needs = (properties: string) => (error: unknown) =>
        error instanceof StoreConfigError && error.message.includes(`on kind ${KIND} (${properties})`) && error.message.includes(`npx datastore-locker-indexes ${KIND}`);
      await assert.rejects(store.queryLocks(list()), needs('lock_state, lock_ts ascending'));
      await assert.rejects(store.queryLocks(list({ order: 'desc' })), needs('lock_state, lock_ts descending'));
      await assert.rejects(store.queryLocks(list({ run: 'run-1', order: 'desc' })), needs('lock_run, lock_state, lock_ts descending'));
      await assert.rejects(store.countLocks(count({ tsBefore: since })), needs('lock_state, lock_ts ascending'));
      await assert.rejects(store.countLocks(count({ run: 'run-1', tsFrom: since })), needs('lock_run, lock_state, lock_ts ascending'));
    });
  });
});
