import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { ContentionError, StoreUnavailableError } from '../../src/errors/errors';
import { MemoryStore, type MemoryStoreOperation } from '../../src/store/memory/store';
import { storeContract } from './store-contract';

storeContract('MemoryStore', () => ({ store: new MemoryStore() }));

describe('MemoryStore: injected faults', () => {
  const k = new Key({ path: ['Order', 'faulty'] });

  it('fails the next n operations with the given error, then works again', async () => {
    const store = new MemoryStore();
    store.failNext(2);
    await assert.rejects(store.get(k), StoreUnavailableError);
    await assert.rejects(store.listDue(new Date(), 10), StoreUnavailableError);
    assert.equal(await store.get(k), undefined);
    const contention = new ContentionError('injected');
    store.failNext(1, contention);
    await assert.rejects(store.transaction(async () => 'never runs'), (err) => err === contention);
  });

  it('consults the fault hook before every operation; a failed commit applies nothing', async () => {
    const seen: MemoryStoreOperation[] = [];
    let failCommit = true;
    const store = new MemoryStore({
      fault: (operation) => {
        seen.push(operation);
        return operation === 'commit' && failCommit ? new StoreUnavailableError('outage') : undefined;
      },
    });
    const at = new Date(0);
    const ledger = { id: 't', key: k, seq: 1, chain: 'c', path: '/p', body: '{}', createdAt: at, task: 't', sends: 1, sentAt: at, failures: 0, due: at };
    const write = () =>
      store.transaction(async (tx) => {
        await tx.get(k);
        tx.put(k, { n: 1 }, []);
        tx.putLedger(ledger);
      });
    await assert.rejects(write(), StoreUnavailableError);
    assert.deepEqual(seen, ['begin', 'lookup', 'commit']);
    assert.equal(await store.get(k), undefined);
    assert.deepEqual((await store.listDue(new Date(1), 10)).records, []);
    failCommit = false;
    await write();
    assert.deepEqual(await store.get(k), { n: 1 });
    assert.equal((await store.listDue(new Date(1), 10)).records.length, 1);
    await store.retireLedgerMany([{ key: k, id: ledger.id }], () => false);
    assert.deepEqual(seen.slice(-3), ['get', 'listDue', 'retireLedgerMany']);
    assert.deepEqual((await store.listDue(new Date(1), 10)).records, [], 'the record is removed');
  });

  it('consults the fault hook before reads and replaces; a failed replace writes nothing', async () => {
    const seen: MemoryStoreOperation[] = [];
    let failReplace = true;
    const store = new MemoryStore({
      fault: (operation) => {
        seen.push(operation);
        return operation === 'replace' && failReplace ? new StoreUnavailableError('outage') : undefined;
      },
    });
    await store.transaction(async (tx) => tx.put(k, { n: 0 }, []));
    seen.length = 0;
    const snapshot = await store.read(k);
    assert.ok(snapshot);
    await assert.rejects(store.replaceIfUnchanged(k, snapshot, { n: 1 }, []), StoreUnavailableError);
    assert.deepEqual(seen, ['read', 'replace']);
    assert.deepEqual(await store.get(k), { n: 0 });
    failReplace = false;
    assert.ok(await store.replaceIfUnchanged(k, snapshot, { n: 1 }, []), 'the snapshot is still fresh');
    assert.deepEqual(await store.get(k), { n: 1 });
    store.failNext(1);
    await assert.rejects(store.read(k), StoreUnavailableError);
  });

  it('takes a project id', () => {
    assert.equal(new MemoryStore({ projectId: 'demo' }).projectId, 'demo');
    assert.equal(new MemoryStore().projectId, undefined);
  });
});
