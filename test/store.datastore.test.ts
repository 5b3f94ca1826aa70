import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Datastore, Key } from '@google-cloud/datastore';
import { ConfigError, ContentionError, LeaseLostError, StoreUnavailableError } from '../src/errors';
import { DatastoreStore } from '../src/store/datastore';
import { toStoreError } from '../src/store/datastore-errors';
import type { OutboxRecord } from '../src/types';
import { storeContract } from './store-contract';
import { closedPort, legacyDatastore, uniqueNamespace, unreachableDatastore } from './support/emulator';

const client = legacyDatastore();

for (const beginWithFirstRead of [true, false]) {
  storeContract(`DatastoreStore on the Datastore emulator (beginWithFirstRead: ${beginWithFirstRead})`, (namespaces) => ({
    store: new DatastoreStore(client, { beginWithFirstRead, namespaces }),
    raw: client,
  }));
}

function outboxRecord(namespace: string, name: string): OutboxRecord {
  const key = new Key({ namespace, path: ['Order', name] });
  return { name, key, seq: 1, path: '/p', body: '{}', createdAt: new Date('2020-01-01T00:00:00.000Z') };
}

/** Records the names of the transaction RPCs the client sends from now on. */
async function spyOnCalls(datastore: Datastore): Promise<string[]> {
  await datastore.get(new Key({ path: ['Warm', 'up'] })); // the client creates its gRPC stub on first use
  const stub = datastore.clients_.get('DatastoreClient') as unknown as Record<string, (...args: unknown[]) => unknown>;
  const calls: string[] = [];
  for (const method of ['beginTransaction', 'lookup', 'commit', 'rollback']) {
    const original = stub[method]!.bind(stub);
    stub[method] = (...args: unknown[]) => {
      calls.push(method);
      return original(...args);
    };
  }
  return calls;
}

describe('DatastoreStore on the Datastore emulator', () => {
  it('finds outbox records in every namespace with the __namespace__ query', async () => {
    const store = new DatastoreStore(client);
    const records = [outboxRecord('', uniqueNamespace('default')), outboxRecord(uniqueNamespace('swept'), 'in-ns')];
    await store.transaction(async (tx) => records.forEach((r) => tx.putOutbox(r)));
    // A store that never wrote them finds them too: the namespaces come from Datastore.
    const listed = await new DatastoreStore(client).listOutbox(new Date('2020-01-02T00:00:00.000Z'), 1000);
    for (const r of records) {
      assert.ok(
        listed.some((l) => l.name === r.name && (l.key.namespace ?? '') === (r.key.namespace ?? '')),
        `${r.name} in namespace "${r.key.namespace ?? ''}" is listed`,
      );
    }
    await Promise.all(records.map((r) => store.deleteOutbox(r)));
  });

  it('begins a transaction with its first read, or with beginTransaction when that is off', async () => {
    for (const [beginWithFirstRead, expected] of [
      [true, ['lookup', 'commit', 'lookup', 'rollback']],
      [false, ['beginTransaction', 'lookup', 'commit', 'beginTransaction', 'lookup', 'rollback']],
    ] as const) {
      const spied = legacyDatastore();
      const calls = await spyOnCalls(spied);
      const store = new DatastoreStore(spied, { beginWithFirstRead });
      const k = new Key({ namespace: uniqueNamespace('begin'), path: ['Order', 'first-read'] });
      await store.transaction(async (tx) => {
        await tx.get(k);
        tx.put(k, { n: 1 }, []);
      });
      const failure = new Error('handler failed');
      await assert.rejects(
        store.transaction(async (tx) => {
          await tx.get(k);
          throw failure;
        }),
        (err) => err === failure,
      );
      assert.deepEqual(calls, expected, `beginWithFirstRead: ${beginWithFirstRead}`);
    }
  });

  it('takes the project id from its client', () => {
    assert.equal(new DatastoreStore(client).projectId, 'locker-test');
  });

  it('refuses a missing client and bad options with ConfigError', () => {
    assert.throws(() => new DatastoreStore({} as Datastore), ConfigError);
    assert.throws(() => new DatastoreStore(client, { outboxKind: '' }), ConfigError);
    assert.throws(() => new DatastoreStore(client, { outboxKind: '__kind__' }), ConfigError);
    assert.throws(() => new DatastoreStore(client, { namespaces: [] }), ConfigError);
  });

  for (const beginWithFirstRead of [true, false]) {
    it(`surfaces an unreachable Datastore as StoreUnavailableError (beginWithFirstRead: ${beginWithFirstRead})`, { timeout: 60_000 }, async () => {
      const port = await closedPort();
      const store = new DatastoreStore(unreachableDatastore(port), { beginWithFirstRead, gaxOptions: { timeout: 2_000 } });
      const k = new Key({ path: ['Order', 'unreachable'] });
      const unavailable = (err: unknown) => {
        assert.ok(err instanceof StoreUnavailableError, `expected StoreUnavailableError, got ${String(err)}`);
        const code = (err.cause as { code?: number } | undefined)?.code;
        assert.ok(code === 14 || code === 4, `caused by UNAVAILABLE or DEADLINE_EXCEEDED, not ${code}`);
        return true;
      };
      await assert.rejects(store.get(k), unavailable);
      await assert.rejects(store.transaction((tx) => tx.get(k)), unavailable);
      await assert.rejects(store.transaction(async (tx) => tx.put(k, { a: 1 }, [])), unavailable);
      await assert.rejects(store.listOutbox(new Date(), 10), unavailable);
      await assert.rejects(store.deleteOutbox(outboxRecord('', 'x')), unavailable);
    });
  }
});

describe('Datastore errors as store errors', () => {
  const grpcError = (code: number, details: string) => Object.assign(new Error(`${code} ${details}`), { code, details });

  it('maps ABORTED and lock timeouts to ContentionError, keeping the cause', () => {
    for (const cause of [
      grpcError(10, 'ABORTED: too much contention on these datastore entities. please try again.'),
      grpcError(10, 'ABORTED: Transaction lock timeout.'),
      new Error('Transaction lock timeout.'),
    ]) {
      const mapped = toStoreError('commit', cause);
      assert.ok(mapped instanceof ContentionError, cause.message);
      assert.equal(mapped.cause, cause);
    }
  });

  it('maps every other failure to StoreUnavailableError, keeping the cause', () => {
    const causes: Error[] = [14, 4, 13, 2, 8, 3, 7].map((code) => grpcError(code, 'failed'));
    for (const cause of [...causes, new Error('connect ECONNREFUSED 127.0.0.1:1')]) {
      const mapped = toStoreError('lookup', cause);
      assert.ok(mapped instanceof StoreUnavailableError, cause.message);
      assert.equal(mapped.cause, cause);
      assert.match(mapped.message, /^Datastore lookup failed: /);
    }
  });

  it("passes the library's own errors through unchanged", () => {
    const lost = new LeaseLostError('lost');
    assert.equal(toStoreError('commit', lost), lost);
  });
});
