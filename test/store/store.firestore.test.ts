import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import { storeContract } from './store-contract';
import { datastoreRaw, firestoreDatastore, uniqueNamespace } from '../support/emulator';

// The Firestore emulator mishandles transactions that begin with their first read (it leaves the
// keys locked for a minute) and ignores Mutation.base_version: the store finds both out itself,
// so it runs with no options here (namespaces only pins the outbox listing to the test's own).
const client = firestoreDatastore();

storeContract('DatastoreStore on the Firestore emulator in Datastore mode', (namespaces) => ({
  store: new DatastoreStore(client, { namespaces }),
  raw: datastoreRaw(client),
  lockingReads: true,
}));

describe('DatastoreStore on the Firestore emulator in Datastore mode', () => {
  it('trusts baseVersion when told to (conditionalWrites: true), and this emulator then applies a stale write', async () => {
    // If this fails, the emulator honours baseVersion now (the backend check would find it too).
    const store = new DatastoreStore(client, { beginWithFirstRead: false, conditionalWrites: true });
    const k = new Key({ namespace: uniqueNamespace('base-version'), path: ['Order', 'ignored'] });
    await store.transaction(async (tx) => tx.put(k, { n: 0 }, []));
    const stale = await store.read(k);
    assert.ok(stale);
    assert.ok(await store.replaceIfUnchanged(k, stale, { n: 1 }, []));
    const ignored = await store.replaceIfUnchanged(k, stale, { n: 2 }, []);
    assert.notEqual(ignored, undefined, 'the stale write was reported as applied');
    assert.deepEqual(await store.get(k), { n: 2 }, 'and it was applied');
  });

  it('falls back to the namespaces it wrote ledger records to when namespaces cannot be listed', async () => {
    const store = new DatastoreStore(client);
    const namespace = uniqueNamespace('fallback');
    const at = new Date('2020-01-01T00:00:00.000Z');
    const record = {
      id: 'fallback-task',
      key: new Key({ namespace, path: ['Order', 'a'] }),
      seq: 1,
      chain: 'c',
      path: '/p',
      body: '{}',
      createdAt: at,
      task: 'fallback-task',
      sends: 1,
      sentAt: at,
      failures: 0,
      due: at,
    };
    await store.transaction(async (tx) => tx.putLedger(record));
    const listed = (await store.listDue(new Date('2020-01-02T00:00:00.000Z'), 100)).records;
    assert.ok(listed.some((r) => r.id === record.id && r.key.namespace === namespace));
    await store.transaction(async (tx) => tx.deleteLedger(record.key, record.id));
  });
});
