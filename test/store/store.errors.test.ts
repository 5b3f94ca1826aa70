// Every failure of Datastore reaches the caller as one of four classes, decided where it enters the
// store, against real servers: a Datastore gRPC server on loopback answering chosen codes, a TCP
// proxy in front of the legacy emulator that resets or stalls connections, and both emulators for
// what they refuse. No timing is asserted: a hung store must end, as StoreUnavailableError.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { Datastore, Key } from '@google-cloud/datastore';
import { ContentionError, StoreConfigError, StoreRejectedError, StoreUnavailableError, type LockerError } from '../../src/errors/errors';
import { DatastoreStore } from '../../src/store/datastore/store';
import type { Snapshot } from '../../src/types';
import { spyClient } from '../support/datastore-spy';
import { datastoreFor, startDatastoreServer, type DatastoreServer } from '../support/datastore-server';
import { firestoreDatastore, legacyDatastore, uniqueNamespace } from '../support/emulator';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

type ErrorClass = new (...args: never[]) => LockerError;

const KEY = new Key({ namespace: 'errors', path: ['Order', 'e-1'] });

/** Each store call, as a function of a store and a snapshot it read. */
const OPERATIONS: Array<[string, (store: DatastoreStore, snapshot: Snapshot) => Promise<unknown>]> = [
  ['get', (store) => store.get(KEY)],
  ['read', (store) => store.read(KEY)],
  ['replaceIfUnchanged', (store, snapshot) => store.replaceIfUnchanged(KEY, snapshot, { n: 1 }, [])],
  ['a transaction', (store) => store.transaction(async (tx) => tx.put(KEY, { ...(await tx.get(KEY)), n: 2 }, []))],
  ['listDue', (store) => store.listDue(new Date(), 10)],
  ['retireLedgerMany', (store) => store.retireLedgerMany([{ key: KEY, id: 'task-1' }], () => false)],
];

/** The code each class comes from, and what its message must say. */
const CASES: Array<[string, grpc.status, ErrorClass, RegExp]> = [
  ['ABORTED', grpc.status.ABORTED, ContentionError, /contention/],
  ['UNAVAILABLE', grpc.status.UNAVAILABLE, StoreUnavailableError, /UNAVAILABLE/],
  ['DEADLINE_EXCEEDED', grpc.status.DEADLINE_EXCEEDED, StoreUnavailableError, /DEADLINE_EXCEEDED|timeout/i],
  ['INTERNAL', grpc.status.INTERNAL, StoreUnavailableError, /INTERNAL/],
  ['RESOURCE_EXHAUSTED', grpc.status.RESOURCE_EXHAUSTED, StoreUnavailableError, /RESOURCE_EXHAUSTED/],
  ['INVALID_ARGUMENT', grpc.status.INVALID_ARGUMENT, StoreRejectedError, /INVALID_ARGUMENT/],
  ['PERMISSION_DENIED', grpc.status.PERMISSION_DENIED, StoreConfigError, /To fix: grant .*roles\/datastore\.user/],
  ['UNAUTHENTICATED', grpc.status.UNAUTHENTICATED, StoreConfigError, /To fix: check the credentials/],
  ['NOT_FOUND (the database)', grpc.status.NOT_FOUND, StoreConfigError, /To fix: check .*projectId and databaseId/],
  ['FAILED_PRECONDITION (an index)', grpc.status.FAILED_PRECONDITION, StoreConfigError, /To fix: create the index/],
];

function isA(type: ErrorClass, message: RegExp, what: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof type, `${what}: expected ${type.name}, got ${String(error)}`);
    assert.match(error.message, message, what);
    return true;
  };
}

describe('DatastoreStore errors from a Datastore that answers chosen codes', () => {
  let server: DatastoreServer;
  let store: DatastoreStore;
  let snapshot: Snapshot;

  before(async () => {
    server = await startDatastoreServer();
    // Trusted backend (no check), and a short deadline so the retried codes end soon.
    store = new DatastoreStore(datastoreFor(server), { conditionalWrites: true, beginWithFirstRead: true, callTimeoutMs: 1_000, namespaces: [''] });
    const read = await store.read(KEY);
    assert.ok(read);
    snapshot = read;
  });
  after(async () => {
    await store.shutdown();
    await server.close();
  });

  for (const [name, code, type, message] of CASES) {
    it(`${name} is ${type.name} from every call`, async () => {
      for (const [operation, run] of OPERATIONS) {
        server.reset();
        // Retried codes (UNAVAILABLE, DEADLINE_EXCEEDED on reads) keep failing until the deadline.
        server.failNext(code, 1_000, `${grpc.status[code]}: chosen by the test`);
        await assert.rejects(run(store, snapshot), isA(type, message, `${name} on ${operation}`));
      }
    });
  }

  it('ends a call the server never answers with StoreUnavailableError, on every call', async () => {
    for (const [operation, run] of OPERATIONS) {
      server.reset();
      server.hangNext(1_000);
      await assert.rejects(run(store, snapshot), isA(StoreUnavailableError, /DEADLINE_EXCEEDED|timeout/i, `a hang on ${operation}`));
    }
  });
});

describe('DatastoreStore errors through a TCP proxy in front of the Datastore emulator', () => {
  let proxy: TcpProxy;
  let store: DatastoreStore;
  let snapshot: Snapshot;
  const key = new Key({ namespace: uniqueNamespace('proxy'), path: ['Order', 'proxied'] });

  before(async () => {
    proxy = await startTcpProxy(process.env.DATASTORE_EMULATOR_HOST ?? '');
    const datastore = new Datastore({ projectId: legacyDatastore().options.projectId, apiEndpoint: `127.0.0.1:${proxy.port}` });
    store = new DatastoreStore(datastore, { callTimeoutMs: 1_500 });
    await store.transaction(async (tx) => tx.put(key, { n: 0 }, []));
    const read = await store.read(key);
    assert.ok(read);
    snapshot = read;
  });
  after(async () => {
    await store.shutdown();
    await proxy.close();
  });

  for (const mode of ['reset', 'stall'] as const) {
    it(`answers every call with StoreUnavailableError while connections ${mode === 'reset' ? 'are reset' : 'stall'}, and works again after`, async () => {
      proxy.setMode(mode);
      try {
        await assert.rejects(store.get(key), StoreUnavailableError);
        await assert.rejects(store.read(key), StoreUnavailableError);
        await assert.rejects(store.replaceIfUnchanged(key, snapshot, { n: 1 }, []), StoreUnavailableError);
        await assert.rejects(store.transaction(async (tx) => tx.put(key, { n: 2 }, [])), StoreUnavailableError);
      } finally {
        proxy.setMode('pass');
      }
      assert.deepEqual(await eventually(() => store.get(key)), { n: 0 }, 'nothing was written, and the store is reachable again');
    });
  }
});

for (const [emulator, datastore, enforcesSize] of [
  ['the Datastore emulator', legacyDatastore(), false],
  ['the Firestore emulator', firestoreDatastore(), true],
] as const) {
  describe(`DatastoreStore errors for writes ${emulator} refuses`, () => {
    it('refuses an entity over 1 MiB with StoreRejectedError, in a transaction and as a compare-and-swap; nothing is written', { timeout: 60_000 }, async (t) => {
      if (!enforcesSize) return t.skip('the legacy emulator stores entities over 1 MiB (production and the Firestore emulator refuse them)');
      const store = new DatastoreStore(datastore);
      const key = new Key({ namespace: uniqueNamespace('too-big'), path: ['Order', 'big'] });
      await store.transaction(async (tx) => tx.put(key, { n: 0 }, []));
      const snapshot = await store.read(key);
      assert.ok(snapshot);
      const huge = 'x'.repeat(1_100_000);
      await assert.rejects(store.transaction(async (tx) => tx.put(key, { n: 1, huge }, [])), StoreRejectedError);
      await assert.rejects(store.replaceIfUnchanged(key, snapshot, { n: 1, huge }, []), StoreRejectedError);
      assert.deepEqual(await store.get(key), { n: 0 });
      assert.ok(await store.replaceIfUnchanged(key, snapshot, { n: 1 }, []), 'the snapshot is still fresh');
    });

    it('refuses a value it cannot hold before sending anything', async () => {
      const spy = spyClient(datastore);
      const store = new DatastoreStore(datastore, { client: spy.client, conditionalWrites: true, beginWithFirstRead: true });
      const key = new Key({ namespace: uniqueNamespace('unstorable'), path: ['Order', 'bad'] });
      const snapshot = { properties: {}, version: (await seededSnapshot(store, key)).version };
      spy.clear();
      class Money {
        constructor(readonly cents: number) {}
      }
      for (const bad of [{ n: 10n }, { m: new Map() }, { s: new Set() }, { money: new Money(1) }, { nested: [[1]] }]) {
        await assert.rejects(store.replaceIfUnchanged(key, snapshot, bad, []), StoreRejectedError);
      }
      assert.deepEqual(spy.calls, [], 'no RPC was sent');
      await spy.close();
    });
  });
}

/** The result of `run` once it succeeds (a reconnecting client fails fast for a while), up to 30 tries. */
async function eventually<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= 30) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

async function seededSnapshot(store: DatastoreStore, key: Key): Promise<Snapshot> {
  await store.transaction(async (tx) => tx.put(key, { n: 0 }, []));
  const snapshot = await store.read(key);
  assert.ok(snapshot);
  return snapshot;
}
