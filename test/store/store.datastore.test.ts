import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Datastore, Key } from '@google-cloud/datastore';
import { ConfigError, ContentionError, LeaseLostError, StoreConfigError, StoreRejectedError, StoreUnavailableError } from '../../src/errors/errors';
import { DatastoreStore, type DatastoreStoreOptions } from '../../src/store/datastore/store';
import { spyClient, type SpiedClient } from '../support/datastore-spy';
import { toStoreError } from '../../src/store/datastore/errors';
import { EntityVersion } from '../../src/store/datastore/snapshot';
import type { LedgerRecord, Snapshot } from '../../src/types';
import { storeContract } from './store-contract';
import { closedPort, datastoreRaw, legacyDatastore, uniqueNamespace, unreachableDatastore } from '../support/emulator';

const client = legacyDatastore();

// No options (the store checks the emulator: both optimisations hold), and each override: a
// transaction begun with beginTransaction, and compare-and-swap as a transaction.
for (const options of [{}, { beginWithFirstRead: false }, { conditionalWrites: false }] as const) {
  storeContract(`DatastoreStore on the Datastore emulator (${JSON.stringify(options)})`, (namespaces) => ({
    store: new DatastoreStore(client, { ...options, namespaces }),
    raw: datastoreRaw(client),
  }));
}

function ledgerRecord(namespace: string, id: string): LedgerRecord {
  const key = new Key({ namespace, path: ['Order', id] });
  const at = new Date('2020-01-01T00:00:00.000Z');
  return { id, key, seq: 1, chain: 'c', path: '/p', body: '{}', createdAt: at, task: id, sends: 1, sentAt: at, failures: 0, due: at };
}

/** A store whose RPCs are recorded, on a client of its own. */
function spiedStore(options: DatastoreStoreOptions = {}): { store: DatastoreStore; spy: SpiedClient } {
  const spy = spyClient(client);
  return { store: new DatastoreStore(client, { ...options, client: spy.client }), spy };
}

/** The server version a snapshot of a DatastoreStore was read or written at. */
function versionOf(snapshot: Snapshot | undefined): string {
  assert.ok(snapshot?.version instanceof EntityVersion, 'a DatastoreStore snapshot');
  return snapshot.version.version;
}

describe('DatastoreStore on the Datastore emulator', () => {
  it('finds ledger records in every namespace with the __namespace__ query', async () => {
    const store = new DatastoreStore(client);
    const records = [ledgerRecord('', uniqueNamespace('default')), ledgerRecord(uniqueNamespace('swept'), 'in-ns')];
    await store.transaction(async (tx) => records.forEach((r) => tx.putLedger(r)));
    // A store that never wrote them finds them too: the namespaces come from Datastore.
    const listed = (await new DatastoreStore(client).listDue(new Date('2020-01-02T00:00:00.000Z'), 1000)).records;
    for (const r of records) {
      assert.ok(
        listed.some((l) => l.id === r.id && (l.key.namespace ?? '') === (r.key.namespace ?? '')),
        `${r.id} in namespace "${r.key.namespace ?? ''}" is listed`,
      );
    }
    await store.transaction(async (tx) => records.forEach((r) => tx.deleteLedger(r.key, r.id)));
  });

  it('lists due records in as few queries as they take: one when they fit the limit, more only to read past malformed ones', async () => {
    const ns = uniqueNamespace('due-queries');
    const { store, spy } = spiedStore({ namespaces: [ns], conditionalWrites: true, beginWithFirstRead: true });
    const at = new Date('2020-01-01T00:00:00.000Z');
    await store.transaction(async (tx) => {
      for (const id of ['a', 'b']) tx.putLedger(ledgerRecord(ns, id));
    });
    spy.clear();
    assert.deepEqual((await store.listDue(at, 10)).records.map((r) => r.id).sort(), ['a', 'b']);
    assert.deepEqual(spy.calls, ['runQuery'], 'one query when the records fit the limit');
    await store.transaction(async (tx) => {
      for (let i = 0; i < 3; i++) tx.put(new Key({ namespace: ns, path: ['LockerOutbox', `broken-${i}`] }), { due: new Date(at.getTime() - 1 - i), seq: 'x' }, []);
    });
    spy.clear();
    const found = await store.listDue(at, 2);
    assert.deepEqual(found.records.map((r) => r.id).sort(), ['a', 'b']);
    assert.equal(found.malformed.length, 3);
    assert.ok(spy.calls.length >= 2 && spy.calls.length <= 3, `a few queries to read past the malformed records: ${spy.calls.join(', ')}`);
    await spy.close();
  });

  it('begins a transaction with its first read, or with beginTransaction when that is off', async () => {
    for (const [beginWithFirstRead, expected] of [
      [true, ['lookup', 'commit', 'lookup', 'rollback']],
      [false, ['beginTransaction', 'lookup', 'commit', 'beginTransaction', 'lookup', 'rollback']],
    ] as const) {
      const { store, spy } = spiedStore({ beginWithFirstRead, conditionalWrites: true });
      const { calls } = spy;
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

  it('reads with one lookup and replaces with one non-transactional commit carrying baseVersion', async () => {
    const { store, spy } = spiedStore({ beginWithFirstRead: true, conditionalWrites: true });
    const { calls, sent } = spy;
    const k = new Key({ namespace: uniqueNamespace('cas'), path: ['Order', 'one-commit'] });
    await store.transaction(async (tx) => tx.put(k, { n: 0 }, []));
    calls.length = 0;
    sent.length = 0;

    const read = await store.read(k);
    assert.deepEqual(calls, ['lookup']);
    const written = await store.replaceIfUnchanged(k, read!, { n: 1 }, ['n']);
    assert.ok(written);
    assert.deepEqual(calls, ['lookup', 'commit'], 'the replace is one commit: no beginTransaction, no lookup');
    const { request } = sent[1]!;
    assert.equal(request.mode, 'NON_TRANSACTIONAL');
    assert.equal(request.transaction ?? undefined, undefined);
    assert.equal(request.mutations?.length, 1);
    assert.equal(String(request.mutations?.[0]?.baseVersion), versionOf(read));
    assert.ok(request.mutations?.[0]?.upsert, 'an upsert');
    assert.notEqual(versionOf(written), versionOf(read), 'the new snapshot carries the version the commit reported');
    assert.equal(versionOf(await store.read(k)), versionOf(written));

    assert.equal(await store.replaceIfUnchanged(k, read!, { n: 2 }, []), undefined);
    assert.deepEqual(calls, ['lookup', 'commit', 'lookup', 'commit'], 'a stale replace is one commit too');
    assert.deepEqual(await store.get(k), { n: 1 });
  });

  for (const [beginWithFirstRead, fresh, stale] of [
    [true, ['lookup', 'commit'], ['lookup', 'rollback']],
    [false, ['beginTransaction', 'lookup', 'commit'], ['beginTransaction', 'lookup', 'rollback']],
  ] as const) {
    it(`replaces in a transaction with conditionalWrites off (beginWithFirstRead: ${beginWithFirstRead})`, async () => {
      const { store, spy } = spiedStore({ beginWithFirstRead, conditionalWrites: false });
      const { calls, sent } = spy;
      const k = new Key({ namespace: uniqueNamespace('cas-tx'), path: ['Order', 'in-transaction'] });
      await store.transaction(async (tx) => tx.put(k, { n: 0 }, []));
      const read = await store.read(k);
      calls.length = 0;
      sent.length = 0;

      const written = await store.replaceIfUnchanged(k, read!, { n: 1 }, []);
      assert.ok(written);
      assert.deepEqual(calls, fresh);
      const commit = sent.find((call) => call.method === 'commit')!.request;
      assert.equal(commit.mode, 'TRANSACTIONAL');
      assert.ok(commit.transaction, 'in the transaction the lookup began');
      assert.equal(commit.mutations?.[0]?.baseVersion ?? undefined, undefined);
      assert.equal(versionOf(await store.read(k)), versionOf(written));

      calls.splice(0);
      assert.equal(await store.replaceIfUnchanged(k, read!, { n: 2 }, []), undefined);
      assert.deepEqual(calls, stale, 'a stale snapshot is rolled back');
      assert.deepEqual(await store.get(k), { n: 1 });
    });
  }

  it('retires records in one lookup and one non-transactional commit whose deletes carry the versions read: a record written again meanwhile stays', async () => {
    const ns = uniqueNamespace('retire');
    const other = new DatastoreStore(client, { namespaces: [ns] });
    const again = ledgerRecord(ns, 'retire-again');
    const done = ledgerRecord(ns, 'retire-done');
    await other.transaction(async (tx) => { tx.putLedger(again); tx.putLedger(done); });
    // Between the lookup and the commit, `again` is written again (its step scheduled again): the commit waits for that write.
    let rewrite: Promise<void> | undefined;
    const spy = spyClient(client, {
      hold: (method) => {
        if (method !== 'commit' || rewrite) return undefined;
        rewrite = other.transaction(async (tx) => tx.putLedger({ ...again, body: '{"again":true}' }));
        return rewrite;
      },
    });
    const store = new DatastoreStore(client, { namespaces: [ns], client: spy.client, conditionalWrites: true, beginWithFirstRead: true });
    const judged: string[] = [];
    await store.retireLedgerMany([again, done].map((r) => ({ key: r.key, id: r.id })), (entity, id) => { judged.push(`${id}:${entity === undefined ? 'absent' : 'found'}`); return false; });
    assert.deepEqual(spy.calls, ['lookup', 'commit'], 'one lookup, one commit');
    const commit = spy.sent[1]!.request;
    assert.equal(commit.mode, 'NON_TRANSACTIONAL');
    assert.equal(commit.mutations?.length, 2);
    assert.ok(commit.mutations?.every((m) => m.delete !== undefined && typeof m.baseVersion === 'string' && m.baseVersion !== ''), 'each delete carries the version read');
    assert.deepEqual(judged.sort(), ['retire-again:absent', 'retire-done:absent'], 'each record judged on its entity (none stored)');
    const left = await other.transaction(async (tx) => [await tx.getLedger(again.key, again.id), await tx.getLedger(done.key, done.id)]);
    assert.equal(left[0]?.body, '{"again":true}', 'the record written again after the lookup stays');
    assert.equal(left[1], undefined, 'the other record is removed');
    await spy.close();
    await other.transaction(async (tx) => tx.deleteLedger(again.key, again.id));
  });

  it('replaceMany sends again a non-transactional commit aborted on contention (it applied nothing): records and entities written once each', async () => {
    const ns = uniqueNamespace('batch-aborted');
    // The first commit of records and the first commit of entities are answered ABORTED before
    // they are sent, as the legacy emulator answers a commit to an entity it is still applying.
    const aborted = new Set<string>();
    const spy = spyClient(client, {
      hold: (method, request) => {
        if (method !== 'commit' || request.mode !== 'NON_TRANSACTIONAL') return undefined;
        const which = request.mutations?.some((m) => 'baseVersion' in m) ? 'entities' : 'records';
        if (aborted.has(which)) return undefined;
        aborted.add(which);
        return Promise.reject(Object.assign(new Error('10 ABORTED: too much contention on these datastore entities. please try again.'), { code: 10, details: 'too much contention on these datastore entities. please try again.' }));
      },
    });
    const store = new DatastoreStore(client, { namespaces: [ns], conditionalWrites: true, beginWithFirstRead: true, client: spy.client });
    const keys = ['a', 'b'].map((name) => new Key({ namespace: ns, path: ['Order', name] }));
    const reads = await store.readMany(keys);
    const outcomes = await store.replaceMany(reads.map((read, i) => ({ read, properties: { n: i }, excludeFromIndexes: [], record: { ...ledgerRecord(ns, `r-${i}`), key: keys[i]! } })));
    assert.deepEqual(aborted, new Set(['records', 'entities']), 'both commits were aborted once');
    assert.deepEqual(outcomes.map((o) => (o.outcome === 'error' ? `error: ${o.error.message}` : o.outcome)), ['written', 'written']);
    assert.deepEqual((await store.readMany(keys)).map((r) => r.properties?.n), [0, 1]);
    const due = (await store.listDue(new Date('2100-01-01T00:00:00.000Z'), 10)).records.map((r) => r.id).sort();
    assert.deepEqual(due, ['r-0', 'r-1'], 'each entity\'s record is stored');
    await spy.close();
  });

  it('takes the project id from its client', () => {
    // The project the emulator client was made for (test/support/emulator.ts): each test file gets its own.
    assert.equal(new DatastoreStore(client).projectId, process.env.DATASTORE_PROJECT_ID ?? 'locker-test');
    assert.notEqual(new DatastoreStore(client).projectId, undefined);
  });

  it('refuses a missing client and bad options with ConfigError', () => {
    assert.throws(() => new DatastoreStore({} as Datastore), ConfigError);
    assert.throws(() => new DatastoreStore(client, { outboxKind: '' }), ConfigError);
    assert.throws(() => new DatastoreStore(client, { outboxKind: '__kind__' }), ConfigError);
    assert.throws(() => new DatastoreStore(client, { ledgerKind: '' }), ConfigError);
    assert.throws(() => new DatastoreStore(client, { ledgerKind: 'A', outboxKind: 'B' }), /ledgerKind or its deprecated name outboxKind/);
    assert.throws(() => new DatastoreStore(client, { namespaces: [] }), ConfigError);
  });

  for (const beginWithFirstRead of [true, false]) {
    const conditionalWrites = beginWithFirstRead;
    const options = `beginWithFirstRead: ${beginWithFirstRead}, conditionalWrites: ${conditionalWrites}`;
    it(`surfaces an unreachable Datastore as StoreUnavailableError (${options})`, { timeout: 60_000 }, async () => {
      const port = await closedPort();
      const store = new DatastoreStore(unreachableDatastore(port), { beginWithFirstRead, conditionalWrites, callTimeoutMs: 2_000 });
      const k = new Key({ path: ['Order', 'unreachable'] });
      const reachable = new DatastoreStore(client);
      const known = new Key({ namespace: uniqueNamespace('unreachable'), path: ['Order', 'known'] });
      await reachable.transaction(async (tx) => tx.put(known, { n: 0 }, []));
      const snapshot = await reachable.read(known);
      assert.ok(snapshot);
      const unavailable = (err: unknown) => {
        assert.ok(err instanceof StoreUnavailableError, `expected StoreUnavailableError, got ${String(err)}`);
        const code = (err.cause as { code?: number } | undefined)?.code;
        assert.ok(code === 14 || code === 4, `caused by UNAVAILABLE or DEADLINE_EXCEEDED, not ${code}`);
        return true;
      };
      await assert.rejects(store.get(k), unavailable);
      await assert.rejects(store.read(k), unavailable);
      await assert.rejects(store.replaceIfUnchanged(known, snapshot, { n: 1 }, []), unavailable);
      await assert.rejects(store.transaction((tx) => tx.get(k)), unavailable);
      await assert.rejects(store.transaction(async (tx) => tx.put(k, { a: 1 }, [])), unavailable);
      await assert.rejects(store.listDue(new Date(), 10), unavailable);
      await assert.rejects(store.retireLedgerMany([{ key: k, id: 'x' }], () => false), unavailable);
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

  it('maps transient failures to StoreUnavailableError, keeping the cause', () => {
    const causes: Error[] = [14, 4, 13, 8, 1, 2].map((code) => grpcError(code, 'failed'));
    for (const cause of [...causes, new Error('connect ECONNREFUSED 127.0.0.1:1')]) {
      const mapped = toStoreError('lookup', cause);
      assert.ok(mapped instanceof StoreUnavailableError, cause.message);
      assert.equal(mapped.cause, cause);
      assert.match(mapped.message, /^Datastore lookup failed: /);
    }
  });

  it('maps refusals of the write to StoreRejectedError and set-up errors to StoreConfigError saying what to fix', () => {
    for (const code of [3, 11]) assert.ok(toStoreError('commit', grpcError(code, 'entity too big')) instanceof StoreRejectedError, `code ${code}`);
    for (const [code, fix] of [
      [7, /roles\/datastore.user/],
      [16, /credentials/],
      [5, /projectId and databaseId/],
      [9, /index/],
    ] as const) {
      const mapped = toStoreError('commit', grpcError(code, 'refused'));
      assert.ok(mapped instanceof StoreConfigError, `code ${code}`);
      assert.match(mapped.message, fix);
    }
  });

  it("passes the library's own errors through unchanged", () => {
    const lost = new LeaseLostError('lost');
    assert.equal(toStoreError('commit', lost), lost);
  });
});
