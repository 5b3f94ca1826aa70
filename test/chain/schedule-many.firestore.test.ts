// locker.scheduleMany() on the Firestore emulator in Datastore mode (which ignores baseVersion:
// batches in transactions), with a store built with no option but the namespace it sweeps; and an
// entity the server refuses. The legacy emulator's run is `schedule-many.datastore.test.ts`.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { scheduleManySuite } from './schedule-many-suite';
import { RecordingQueue } from '../support/recording-queue';
import { keys } from '../support/task-app';
import { Locker } from '../../src/locker';
import { StoreRejectedError } from '../../src/errors/errors';
import { DatastoreStore } from '../../src/store/datastore/store';
import { firestoreDatastore, uniqueNamespace } from '../support/emulator';

scheduleManySuite('the Firestore emulator in Datastore mode', async () => {
  const namespace = uniqueNamespace('bulk');
  const store = new DatastoreStore(firestoreDatastore(), { namespaces: [namespace] });
  return { store, namespace, close: () => store.shutdown() };
});

describe('locker.scheduleMany() on Datastore: what the server refuses', () => {
  it('on the Firestore emulator: an entity the server refuses (too large) fails alone; its batch neighbours start', { timeout: 120_000 }, async () => {
    const namespace = uniqueNamespace('bulk-large');
    const store = new DatastoreStore(firestoreDatastore(), { namespaces: [namespace] });
    const queue = new RecordingQueue();
    const locker = new Locker({ store, queue, authenticate: false });
    try {
      const large = new Set([3, 120, 250]);
      const items = Array.from({ length: 300 }, (_, i) => ({
        key: keys.key({ namespace, path: ['Invoice', `large-${i}`] }),
        entity: large.has(i) ? { text: 'x'.repeat(1_100_000) } : { i },
        path: '/step',
      }));
      const result = await locker.scheduleMany(items);
      assert.deepEqual([result.started, result.failed], [297, 3]);
      for (const i of large) {
        const r = result.results[i]!;
        assert.ok(r.status === 'failed' && r.error instanceof StoreRejectedError, `item ${i}: ${r.status}`);
      }
      const stored = await store.readMany(items.map((item) => item.key));
      stored.forEach((read, i) => assert.equal(read.properties === undefined, large.has(i), `item ${i} written: ${!large.has(i)}`));
    } finally {
      await store.shutdown();
    }
  });
});
