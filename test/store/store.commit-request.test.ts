// What a compare-and-swap sends, byte for byte as the server decodes it: the real client against a
// Datastore gRPC server on loopback built from the package's own protos. If an update of
// @google-cloud/datastore changed the request (a transactional commit, a lost baseVersion, more
// than one mutation), the fencing of every write would silently change: this fails instead.
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import { datastoreFor, startDatastoreServer, type DatastoreServer, type Decoded } from '../support/datastore-server';

const KEY = new Key({ namespace: 'orders', path: ['Order', 'cas-1'] });

describe('DatastoreStore: the CommitRequest of a compare-and-swap', () => {
  let server: DatastoreServer;
  let store: DatastoreStore;

  before(async () => {
    server = await startDatastoreServer();
    // The backend is trusted here (the check is tested on the emulators): this is about the request.
    store = new DatastoreStore(datastoreFor(server), { conditionalWrites: true, beginWithFirstRead: true });
  });
  after(async () => {
    await store.shutdown();
    await server.close();
  });
  beforeEach(() => {
    server.reset();
    server.answer('lookup', (request) => ({
      found: [{ entity: { key: (request.keys as Decoded[])[0], properties: { n: { integerValue: '41' } } }, version: '7' }],
    }));
  });

  it('reads with one lookup and writes with ONE non-transactional commit of one upsert carrying the version read', async () => {
    const snapshot = await store.read(KEY);
    assert.ok(snapshot);
    const written = await store.replaceIfUnchanged(KEY, snapshot, { n: 42, lock_req: 'attempt-1' }, ['lock_req']);
    assert.ok(written, 'applied');
    assert.deepEqual(server.calls.map((c) => c.method), ['lookup', 'commit']);

    const lookup = server.calls[0]!.request;
    assert.equal(lookup.readOptions, undefined, 'a plain read: no transaction');
    const commit = server.calls[1]!.request;
    assert.equal(commit.projectId, 'locker-test');
    assert.equal(commit.mode, 'NON_TRANSACTIONAL');
    assert.equal(commit.transaction, undefined, 'no transaction');
    assert.equal(commit.singleUseTransaction, undefined, 'no transaction');
    const mutations = commit.mutations as Decoded[];
    assert.equal(mutations.length, 1, 'one mutation');
    const [mutation] = mutations as [Decoded];
    assert.deepEqual(Object.keys(mutation).sort(), ['baseVersion', 'upsert'], 'an upsert with a base version, nothing else');
    assert.equal(mutation.baseVersion, '7', 'the version the read found');
    const upsert = mutation.upsert as { key: Decoded; properties: Record<string, Decoded> };
    assert.deepEqual(upsert.key, { partitionId: { namespaceId: 'orders' }, path: [{ kind: 'Order', name: 'cas-1' }] });
    assert.deepEqual(upsert.properties.n, { integerValue: '42' });
    assert.deepEqual(upsert.properties.lock_req, { stringValue: 'attempt-1', excludeFromIndexes: true });
    assert.match(server.calls[1]!.metadata['x-goog-request-params'] ?? '', /project_id=locker-test/);
  });

  it('reports a conflict the server detected as undefined, after that one commit', async () => {
    server.answer('commit', () => ({ mutationResults: [{ conflictDetected: true, version: '9' }] }));
    const snapshot = await store.read(KEY);
    assert.ok(snapshot);
    assert.equal(await store.replaceIfUnchanged(KEY, snapshot, { n: 42 }, []), undefined);
    assert.deepEqual(server.calls.map((c) => c.method), ['lookup', 'commit']);
  });

  it('chains the next compare-and-swap on the version the commit reported', async () => {
    server.answer('commit', () => ({ mutationResults: [{ version: '12' }] }));
    const snapshot = await store.read(KEY);
    assert.ok(snapshot);
    const first = await store.replaceIfUnchanged(KEY, snapshot, { n: 42 }, []);
    assert.ok(first);
    await store.replaceIfUnchanged(KEY, first, { n: 43 }, []);
    assert.equal((server.calls[2]!.request.mutations as Decoded[])[0]!.baseVersion, '12');
  });
});
