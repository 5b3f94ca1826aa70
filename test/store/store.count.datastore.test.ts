// How DatastoreStore counts on each emulator: the Firestore emulator in Datastore mode answers a
// count aggregation (one RPC, whatever the count); the legacy Datastore emulator answers it
// UNIMPLEMENTED, so the store counts with keys-only pages there, up to 1,000 keys ("1,000+"), and
// remembers that after the first count (no aggregation asked again).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Key, type Datastore } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import { UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import { StepState } from '../../src/types';
import { firestoreDatastore, legacyDatastore, uniqueNamespace } from '../support/emulator';
import { spyClient, type SpiedClient } from '../support/datastore-spy';

const COUNT = 1_203;

async function seed(store: DatastoreStore, namespace: string): Promise<void> {
  const keys = Array.from({ length: COUNT }, (_, i) => new Key({ namespace, path: ['Counted', `c${i}`] }));
  const batches: Key[][] = [];
  for (let i = 0; i < keys.length; i += 25) batches.push(keys.slice(i, i + 25));
  for (let i = 0; i < batches.length; i += 8) {
    await Promise.all(batches.slice(i, i + 8).map((batch) => store.transaction(async (tx) => {
      for (const key of batch) tx.put(key, { lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.complete }, UNINDEXED_LOCK_FIELDS);
    })));
  }
}

for (const [name, make, expected] of [
  ['the Firestore emulator (Datastore mode)', firestoreDatastore, 'aggregation'],
  ['the legacy Datastore emulator', legacyDatastore, 'keys'],
] as const) {
  describe(`countLocks on ${name}`, () => {
    let datastore: Datastore;
    let spy: SpiedClient;
    let store: DatastoreStore;
    const namespace = uniqueNamespace('count');
    before(async () => {
      datastore = make();
      spy = spyClient(datastore);
      store = new DatastoreStore(datastore, { client: spy.client, beginWithFirstRead: false, conditionalWrites: false });
      await seed(store, namespace);
    });
    after(async () => { await spy.close(); });

    it(expected === 'aggregation' ? 'counts with one aggregation RPC, whatever the count' : 'falls back to keys-only pages, and asks for no aggregation again', async () => {
      spy.clear();
      const counted = await store.countLocks({ kind: 'Counted', namespace, state: StepState.complete, cap: 10_000 });
      assert.deepEqual(counted, expected === 'aggregation' ? { count: COUNT, exact: true } : { count: 1_000, exact: false });
      if (expected === 'aggregation') {
        assert.deepEqual(spy.calls, ['runAggregationQuery']);
      } else {
        assert.equal(spy.calls[0], 'runAggregationQuery', 'asked once');
        assert.ok(spy.calls.slice(1).every((c) => c === 'runQuery') && spy.calls.length >= 3, `then keys-only pages: ${spy.calls.join(', ')}`);
        spy.clear();
        assert.deepEqual(await store.countLocks({ kind: 'Counted', namespace, state: StepState.complete, cap: 500 }), { count: 500, exact: false });
        assert.deepEqual(await store.countLocks({ kind: 'Counted', namespace, state: StepState.failed, cap: 500 }), { count: 0, exact: true });
        assert.ok(spy.calls.every((c) => c === 'runQuery'), `no aggregation asked again: ${spy.calls.join(', ')}`);
      }
    });
  });
}
