import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Datastore, Key } from '@google-cloud/datastore';
import { setLogFunction, type CollectionReference, type DocumentReference, type Firestore, type WriteResult } from '@google-cloud/firestore';
import { ConfigError, ContentionError, LeaseLostError, StoreConfigError, StoreRejectedError, StoreUnavailableError } from '../../src/errors/errors';
import { withDeadline } from '../../src/store/firestore/deadline';
import { toStoreError } from '../../src/store/firestore/errors';
import { FirestoreStore } from '../../src/store/firestore/store';
import { documentOf, keyOf } from '../../src/store/firestore/paths';
import { storeContract } from './store-contract';
import { storeQueryContract } from './store-query-contract';
import { NATIVE_EMULATOR_OPTIONS, useFirestoreNative } from '../support/firestore-native';
import { closedPort, uniqueNamespace } from '../support/emulator';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { taskApp } from '../support/task-app';

const emulator = useFirestoreNative();

// The Native-mode emulator locks what a transaction reads (pessimistic, as the service does): run
// optimistic, the contract's lost-update checks fail (the second writer waits for the first).
storeContract('FirestoreStore on the Firestore emulator in Native mode', (namespaces) => ({
  store: new FirestoreStore(emulator.client(), { ...NATIVE_EMULATOR_OPTIONS, namespaces }),
  lockingReads: true,
}));

storeQueryContract('FirestoreStore on the Firestore emulator in Native mode', () => new FirestoreStore(emulator.client(), NATIVE_EMULATOR_OPTIONS));

describe('FirestoreStore: keys as document paths', () => {
  it('maps kinds to collections, names and ids to documents, ancestors to subcollections, a namespace to a root prefix', async () => {
    const client = emulator.client();
    const ns = uniqueNamespace('paths');
    const cases: Array<[Key, string]> = [
      [new Key({ path: ['Order', 'a'] }), 'Order/a'],
      [new Key({ path: ['Order', 42] }), 'Order/#42'],
      [new Key({ path: ['Order', '42'] }), 'Order/42'],
      [new Key({ path: ['Order', '#42'] }), 'Order/##42'],
      [new Key({ path: ['Order', '__x__'] }), 'Order/#__x__'],
      [new Key({ path: ['Order', Datastore.int('9223372036854775807'), 'Line', 'x'] }), 'Order/#9223372036854775807/Line/x'],
      [new Key({ namespace: ns, path: ['Order', 'a'] }), `LockerNamespaces/${ns}/Order/a`],
    ];
    for (const [key, path] of cases) {
      const ref = documentOf(client, key);
      assert.equal(ref.path, path);
      const back = keyOf(ref);
      assert.ok(back);
      assert.equal(back.namespace, key.namespace);
      assert.deepEqual(back.path.map(String), key.path.map(String), path);
      assert.equal(back.name, key.name);
    }
  });

  it('refuses keys Firestore cannot hold, saying why', async () => {
    const store = new FirestoreStore(emulator.client(), NATIVE_EMULATOR_OPTIONS);
    for (const key of [
      new Key({ path: ['Order', 'a/b'] }),
      new Key({ path: ['__kind__', 'a'] }),
      new Key({ path: ['LockerNamespaces', 'a'] }),
    ]) {
      await assert.rejects(store.get(key), StoreRejectedError, key.path.join(':'));
    }
  });

  it('keeps the lock fields on the user\'s own document, under their own names, and the ledger record in LockerOutbox', async () => {
    const client = emulator.client();
    const store = new FirestoreStore(client, NATIVE_EMULATOR_OPTIONS);
    const ns = uniqueNamespace('own-doc');
    const key = new Key({ namespace: ns, path: ['Order', 'mine'] });
    const at = new Date('2024-01-01T00:00:00.000Z');
    await store.transaction(async (tx) => {
      tx.put(key, { total: 5, lock_ts: at, lock_req: '', lock_seq: 2, lock_try: 0, lock_state: 'scheduled' }, ['lock_req']);
      tx.putLedger({ id: 'task-1', key, seq: 2, chain: 'c', path: '/p', body: '{}', createdAt: at, task: 'task-1', sends: 1, sentAt: at, failures: 0, due: at });
    });
    const doc = (await client.doc(`LockerNamespaces/${ns}/Order/mine`).get()).data();
    assert.deepEqual({ ...doc, lock_ts: undefined }, { total: 5n, lock_ts: undefined, lock_req: '', lock_seq: 2n, lock_try: 0n, lock_state: 'scheduled' });
    assert.equal(doc?.lock_ts.toDate().getTime(), at.getTime());
    const record = (await client.doc(`LockerNamespaces/${ns}/LockerOutbox/task-1`).get()).data();
    assert.equal(record?.key.path, `LockerNamespaces/${ns}/Order/mine`, 'the record names its entity by a document reference');
  });

  it('keeps an integer beyond 2^53 an integer in the document', async () => {
    const client = emulator.client();
    const store = new FirestoreStore(client, NATIVE_EMULATOR_OPTIONS);
    const key = new Key({ namespace: uniqueNamespace('int'), path: ['Order', 'big'] });
    await store.transaction(async (tx) => tx.put(key, { big: Datastore.int('9007199254740993') }, []));
    const doc = (await documentOf(client, key).get()).data();
    assert.equal(doc?.big, 9007199254740993n);
  });
});

describe('FirestoreStore: every namespace, with no namespaces option (collection-group queries)', () => {
  it('lists due records and finds keys in every namespace, and, for a property that is no lock field (a library record), only the top-level documents of the kind', async () => {
    const client = emulator.client();
    const store = new FirestoreStore(client, NATIVE_EMULATOR_OPTIONS);
    const [a, b] = [uniqueNamespace('group-a'), uniqueNamespace('group-b')];
    const due = new Date('2001-01-01T00:00:00.000Z'); // earlier than any other test's records
    const record = (namespace: string, id: string) => ({
      id, key: new Key({ namespace, path: ['Order', id] }), seq: 1, chain: 'c', path: '/p', body: '{}', createdAt: due, task: id, sends: 1, sentAt: due, failures: 0, due,
    });
    await store.transaction(async (tx) => {
      tx.putLedger(record(a, 'group-1'));
      tx.putLedger(record(b, 'group-2'));
      // A user's kind named like the ledger's, below an ancestor: not a ledger record.
      tx.put(new Key({ namespace: a, path: ['Shop', 'x', 'LockerOutbox', 'nested'] }), { due, seq: 'x' }, []);
      tx.put(new Key({ namespace: a, path: ['Marker', 'm1'] }), { tag: 'group-test' }, []);
      tx.put(new Key({ namespace: b, path: ['Marker', 'm2'] }), { tag: 'group-test' }, []);
      tx.put(new Key({ namespace: b, path: ['Shop', 'y', 'Marker', 'm3'] }), { tag: 'group-test' }, []);
    });
    const listed = await store.listDue(due, 10);
    assert.deepEqual(listed.records.map((r) => `${r.key.namespace}:${r.id}`).sort(), [`${a}:group-1`, `${b}:group-2`].sort());
    assert.deepEqual(listed.malformed, [], 'the nested document of the same kind is not read as a record');
    const keys = await store.findKeys({ kind: 'Marker', property: 'tag', equals: 'group-test', limit: 10 });
    assert.deepEqual(keys.map((k) => `${k.namespace}:${k.name}`).sort(), [`${a}:m1`, `${b}:m2`].sort());
  });
});

describe('FirestoreStore: a lock page\'s cursor', () => {
  it('goes on from a document below an ancestor, and refuses a cursor of another kind, another namespace or another form with a RangeError', async () => {
    const store = new FirestoreStore(emulator.client(), NATIVE_EMULATOR_OPTIONS);
    const [namespace, other] = [uniqueNamespace('cursor'), uniqueNamespace('cursor-other')];
    const lock = (minutes: number) => ({ lock_ts: new Date(Date.UTC(2031, 0, 1, 0, minutes)), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: 'failed' });
    await store.transaction(async (tx) => {
      tx.put(new Key({ namespace, path: ['Order', 'o1', 'Line', 'a'] }), lock(0), []);
      tx.put(new Key({ namespace, path: ['Line', 'b'] }), lock(1), []);
      tx.put(new Key({ namespace: other, path: ['Line', 'c'] }), lock(0), []);
      tx.put(new Key({ namespace: other, path: ['Line', 'd'] }), lock(1), []);
    });
    const query = { kind: 'Line', namespace, state: 'failed', order: 'asc', limit: 1 } as const;
    const first = await store.queryLocks(query);
    assert.deepEqual(first.entities.map((e) => e.key.name), ['a']);
    assert.deepEqual((await store.queryLocks({ ...query, cursor: first.cursor! })).entities.map((e) => e.key.name), ['b'], 'on from below an ancestor');
    const elsewhere = (await store.queryLocks({ ...query, namespace: other })).cursor!;
    const bare = Buffer.from(JSON.stringify([Date.UTC(2031, 0, 1), 'a'])).toString('base64url'); // a document id alone
    for (const [what, cursor] of [['another namespace', elsewhere], ['another form', bare], ['not one at all', 'x']] as const) {
      await assert.rejects(store.queryLocks({ ...query, cursor }), { name: 'RangeError', message: /not one this store handed out/u }, what);
    }
    await assert.rejects(store.queryLocks({ ...query, kind: 'Order', cursor: first.cursor! }), RangeError, 'another kind');
  });
});

describe('FirestoreStore: values Firestore cannot hold', () => {
  it('refuses an empty or reserved field name before anything is sent, naming the property', async () => {
    const store = new FirestoreStore(emulator.client(), NATIVE_EMULATOR_OPTIONS);
    const key = new Key({ namespace: uniqueNamespace('fields'), path: ['Order', 'fields'] });
    for (const [bad, path] of [[{ '': 1 }, ''], [{ __name__: 1 }, '__name__'], [{ inner: { '': 1 } }, 'inner.']] as const) {
      await assert.rejects(
        store.transaction(async (tx) => tx.put(key, bad, [])),
        (err: Error) => err instanceof StoreRejectedError && err.message.includes(`property ${path} cannot be stored`),
        JSON.stringify(bad),
      );
    }
    assert.equal(await store.get(key), undefined);
  });
});

describe('Firestore errors as store errors', () => {
  const grpcError = (code: number, details: string) => Object.assign(new Error(`${code} ${details}`), { code, details });

  it('maps ABORTED, lock timeouts and a transaction the emulator closed to ContentionError, keeping the cause', () => {
    for (const cause of [
      grpcError(10, 'ABORTED: Transaction lock timeout.'),
      grpcError(10, 'ABORTED: too much contention'),
      grpcError(3, 'INVALID_ARGUMENT: Transaction is invalid or closed.'),
    ]) {
      const mapped = toStoreError('commit', cause);
      assert.ok(mapped instanceof ContentionError, cause.message);
      assert.equal(mapped.cause, cause);
    }
  });

  it('maps transient failures to StoreUnavailableError, refusals to StoreRejectedError, set-up errors to StoreConfigError', () => {
    for (const code of [14, 4, 13, 8, 1, 2]) assert.ok(toStoreError('lookup', grpcError(code, 'failed')) instanceof StoreUnavailableError, `code ${code}`);
    for (const code of [3, 11]) assert.ok(toStoreError('commit', grpcError(code, 'document too big')) instanceof StoreRejectedError, `code ${code}`);
    for (const [code, fix] of [[7, /roles\/datastore.user/], [16, /credentials/], [5, /Datastore mode/], [9, /index/]] as const) {
      const mapped = toStoreError('commit', grpcError(code, 'refused'));
      assert.ok(mapped instanceof StoreConfigError, `code ${code}`);
      assert.match(mapped.message, fix);
    }
    const lost = new LeaseLostError('lost');
    assert.equal(toStoreError('commit', lost), lost);
  });
});

/** The requests the Firestore client sends while `run` runs, as its log shows them (`setLogFunction`, its public hook). */
async function requestsDuring(run: () => Promise<unknown>): Promise<Array<Record<string, unknown>>> {
  const sent: Array<Record<string, unknown>> = [];
  setLogFunction((line) => {
    const at = line.indexOf('Sending request: ');
    if (at >= 0) sent.push(JSON.parse(line.slice(at + 'Sending request: '.length)) as Record<string, unknown>);
  });
  try {
    await run();
  } finally {
    setLogFunction(null);
  }
  return sent;
}

describe('FirestoreStore: compare-and-swap on the wire', () => {
  it('replaces with one commit of one update whose precondition is the updateTime read, in no transaction', async () => {
    const store = new FirestoreStore(emulator.client(), NATIVE_EMULATOR_OPTIONS);
    const key = new Key({ namespace: uniqueNamespace('wire'), path: ['Order', 'wire'] });
    await store.transaction(async (tx) => tx.put(key, { n: 0, gone: 'x' }, []));
    const read = await store.read(key);
    assert.ok(read);
    await store.checkPreconditions(); // the store's one check of the backend, before its first compare-and-swap
    let written: Awaited<ReturnType<typeof store.replaceIfUnchanged>>;
    const sent = await requestsDuring(async () => { written = await store.replaceIfUnchanged(key, read, { n: 1 }, []); });
    assert.equal(sent.length, 1, `one request: ${JSON.stringify(sent)}`);
    const [commit] = sent as [{ transaction?: unknown; writes: Array<{ update?: { fields: object }; updateMask?: { fieldPaths: string[] }; currentDocument?: { updateTime?: unknown } }> }];
    assert.equal(commit.transaction, undefined, 'no transaction');
    assert.equal(commit.writes.length, 1);
    assert.ok(commit.writes[0]!.currentDocument?.updateTime, 'the precondition is the updateTime read');
    assert.deepEqual(commit.writes[0]!.updateMask?.fieldPaths.sort(), ['gone', 'n'], 'a field left out is deleted');
    assert.ok(written!);
    assert.deepEqual(await store.get(key), { n: 1 });

    const absent = await store.readMany!([new Key({ namespace: key.namespace, path: ['Order', 'new'] })]);
    const record = { id: 'wire-task', key: absent[0]!.key, seq: 1, chain: 'c', path: '/p', body: '{}', createdAt: new Date(0), task: 'wire-task', sends: 1, sentAt: new Date(0), failures: 0, due: new Date(0) };
    const batch = await requestsDuring(() => store.replaceMany!([{ read: absent[0]!, properties: { n: 1 }, excludeFromIndexes: [], record }]));
    assert.equal(batch.length, 1, 'one commit for the entity and its record');
    const writes = (batch[0] as { writes: Array<{ currentDocument?: { exists?: boolean } }> }).writes;
    assert.equal(writes.length, 2);
    assert.ok(writes.some((w) => w.currentDocument?.exists === false), 'the absent entity is created only if still absent');
  });
});

describe('FirestoreStore: the backend check', () => {
  it('checks once, before its first compare-and-swap, that a stale lastUpdateTime is refused, and leaves no scratch document', async () => {
    const client = emulator.client();
    const store = new FirestoreStore(client, NATIVE_EMULATOR_OPTIONS);
    const key = new Key({ namespace: uniqueNamespace('check'), path: ['Order', 'check'] });
    await store.transaction(async (tx) => tx.put(key, { n: 0 }, []));
    const first = await store.read(key);
    assert.ok(first);
    const firstSent = await requestsDuring(() => store.replaceIfUnchanged(key, first, { n: 1 }, []));
    const probes = firstSent.filter((r) => JSON.stringify(r).includes('/documents/LockerProbe/'));
    assert.equal(probes.length, 4, 'create, a fresh update, a stale update, a delete');
    assert.equal(firstSent.length, 5, 'then the replace itself');
    const second = await store.read(key);
    assert.ok(second);
    assert.equal((await requestsDuring(() => store.replaceIfUnchanged(key, second, { n: 2 }, []))).length, 1, 'the check is not run again');
    assert.equal((await client.collection('LockerProbe').get()).size, 0, 'the scratch documents are deleted');
  });

  it('a check whose fresh update applied and came back refused (its answer lost, the client sent it again) is a store fault, run again next time, not a finding', async () => {
    const client = emulator.client();
    const seam = probeUpdateSentTwice(client);
    const store = new FirestoreStore(seam.client, NATIVE_EMULATOR_OPTIONS);
    await assert.rejects(store.checkPreconditions(), (error: unknown) => {
      assert.ok(error instanceof StoreUnavailableError && !(error instanceof StoreConfigError), `a StoreUnavailableError, not a StoreConfigError: ${String(error)}`);
      return true;
    });
    assert.equal(seam.sentTwice(), 1, 'the fresh update was applied, then sent again and refused');
    await store.checkPreconditions(); // the check runs again, and passes
    const key = new Key({ namespace: uniqueNamespace('check'), path: ['Order', 'again'] });
    await store.transaction(async (tx) => tx.put(key, { n: 0 }, []));
    const read = await store.read(key);
    assert.ok(read);
    assert.ok(await store.replaceIfUnchanged(key, read, { n: 1 }, []), 'the compare-and-swap applies');
    assert.equal((await store.get(key))?.n, 1);
  });
});

/**
 * A fault at the seam between the store and its client, as a dropped connection leaves it: the
 * first update of a scratch document (`LockerProbe`) that carries a precondition is applied, then
 * sent again as the client re-sends a commit on UNAVAILABLE, and the second answer is the caller's.
 */
function probeUpdateSentTwice(client: Firestore): { client: Firestore; sentTwice(): number } {
  let twice = 0;
  type Update = (...args: unknown[]) => Promise<WriteResult>;
  const doc = (ref: DocumentReference): DocumentReference => new Proxy(ref, {
    get: (target, prop) => {
      if (prop === 'update' && twice === 0) {
        return async (...args: unknown[]): Promise<WriteResult> => {
          const update = target.update.bind(target) as Update;
          if (args.length < 2) return update(...args);
          twice++;
          await update(...args);
          return update(...args);
        };
      }
      return bindOwn(target, prop);
    },
  });
  const seam = new Proxy(client, {
    get: (target, prop) => {
      if (prop === 'collection') {
        return (path: string): CollectionReference => {
          const collection = target.collection(path);
          if (path !== 'LockerProbe') return collection;
          return new Proxy(collection, {
            get: (c, p) => (p === 'doc' ? (id: string) => doc(c.doc(id)) : bindOwn(c, p)),
          });
        };
      }
      return bindOwn(target, prop);
    },
  });
  return { client: seam, sentTwice: () => twice };
}

function bindOwn(target: object, prop: string | symbol): unknown {
  const value: unknown = Reflect.get(target, prop, target);
  return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
}

describe('FirestoreStore: every call ends within callTimeoutMs', () => {
  /** The deadline the stores below are given, and how long a call may take past it here. */
  const DEADLINE_MS = 500;
  const WITHIN_MS = 5_000;

  /** Asserts that `run` fails with StoreUnavailableError naming the call and the deadline, within WITHIN_MS. */
  async function givenUp(what: string, run: () => Promise<unknown>, message = new RegExp(`did not answer within callTimeoutMs \\(${DEADLINE_MS} ms\\)`)): Promise<void> {
    const started = performance.now();
    await assert.rejects(run(), (error: unknown) => {
      assert.ok(error instanceof StoreUnavailableError, `${what}: expected StoreUnavailableError, got ${String(error)}`);
      assert.match(error.message, message, what);
      return true;
    });
    const took = performance.now() - started;
    assert.ok(took < WITHIN_MS, `${what} ended after ${Math.round(took)} ms`);
  }

  it('refuses a callTimeoutMs that is not a positive integer, naming the option', () => {
    const client = emulator.client();
    for (const bad of [0, -1, 1.5, '5', Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => new FirestoreStore(client, { callTimeoutMs: bad as number }), (error: unknown) => {
        assert.ok(error instanceof ConfigError, String(bad));
        assert.match(error.message, /callTimeoutMs must be a positive integer/);
        return true;
      });
    }
    assert.ok(new FirestoreStore(client, { callTimeoutMs: 1 }));
  });

  it('clears its timer when a call settles first, and leaves the call\'s own error as it is', async () => {
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    assert.equal(await withDeadline('lookup', 60_000, async () => 'answered'), 'answered');
    const refused = new Error('refused');
    await assert.rejects(withDeadline('lookup', 60_000, () => Promise.reject(refused)), (error) => error === refused);
    assert.ok(timers() <= before, 'no deadline timer is left pending');
    await givenUp('a call that never settles', () => withDeadline('lookup', DEADLINE_MS, () => new Promise<never>(() => {})));
    assert.ok(timers() <= before, 'nor once it fired');
  });

  describe('against an unreachable Firestore (a closed loopback port)', () => {
    let port: number;
    let client: Firestore;
    let store: FirestoreStore;
    const key = new Key({ namespace: uniqueNamespace('unreachable'), path: ['Order', 'unreachable'] });

    before(async () => {
      port = await closedPort();
      client = emulator.clientOf(`127.0.0.1:${port}`);
      store = new FirestoreStore(client, { callTimeoutMs: DEADLINE_MS, projectId: 'locker-native' });
    });
    after(async () => {
      // The calls given up are the client's still (it retries UNAVAILABLE for up to a minute, and
      // terminate() waits for them): the port opens onto the emulator, so they end and the client
      // closes at once; the store itself leaves no timer behind, or this file's process would not exit.
      const proxy = await startTcpProxy(emulator.host(), port);
      await eventually(() => new FirestoreStore(client, NATIVE_EMULATOR_OPTIONS).read(new Key({ namespace: key.namespace, path: ['Order', 'revived'] })));
      await client.terminate();
      await proxy.close();
    });

    it('ends reads, a transaction, queries and a batch read with StoreUnavailableError within the deadline', async () => {
      await givenUp('read', () => store.read(key));
      await givenUp('get', () => store.get(key));
      await givenUp('a transaction that reads', () => store.transaction(async (tx) => tx.put(key, { ...(await tx.get(key)), n: 1 }, [])));
      await givenUp('listDue', () => store.listDue(new Date(), 10));
      await givenUp('queryLocks', () => store.queryLocks({ kind: 'Order', state: 'scheduled', order: 'asc', limit: 10 }));
      await givenUp('readMany', () => store.readMany!([key]));
    });

    it('answers a task 503 with a log line, not a crash', async () => {
      const t = taskApp(store);
      const started = performance.now();
      const res = await t.send(key, 1);
      assert.equal(res.status, 503);
      assert.ok(performance.now() - started < 3 * WITHIN_MS, 'within a few deadlines');
      assert.equal(t.runs.length, 0, 'the handler never ran');
      assert.ok(t.logger.lines.some((l) => /store unavailable/i.test(l.message)), JSON.stringify(t.logger.lines));
    });
  });

  describe('against a Firestore that accepts connections and never answers (a stalled proxy)', () => {
    let proxy: TcpProxy;
    let client: Firestore;
    let store: FirestoreStore;
    const namespace = uniqueNamespace('stalled');
    const read = new Key({ namespace, path: ['Order', 'read'] });
    const untouched = new Key({ namespace, path: ['Order', 'untouched'] });
    const committed = new Key({ namespace, path: ['Order', 'committed'] });

    before(async () => {
      proxy = await startTcpProxy(emulator.host());
      client = emulator.clientOf(`127.0.0.1:${proxy.port}`);
      store = new FirestoreStore(client, { callTimeoutMs: DEADLINE_MS, namespaces: [namespace] });
      const direct = new FirestoreStore(emulator.client(), NATIVE_EMULATOR_OPTIONS);
      await direct.transaction(async (tx) => {
        tx.put(read, { n: 0 }, []);
        tx.put(untouched, { n: 0 }, []);
      });
    });
    after(async () => {
      await proxy.close();
    });

    it('ends every call with StoreUnavailableError within the deadline; a transaction given up at a read writes nothing; works again after', async () => {
      const snapshot = await store.read(read);
      assert.ok(snapshot);
      assert.ok(await store.replaceIfUnchanged(read, snapshot, { n: 1 }, []), 'the backend check and a first write, through the proxy');
      const fresh = await store.read(read);
      assert.ok(fresh);
      proxy.setMode('stall');
      try {
        await givenUp('read', () => store.read(read));
        await givenUp('readWithLedger', () => store.readWithLedger(read, 'task-1'));
        await givenUp('replaceIfUnchanged', () => store.replaceIfUnchanged(read, fresh, { n: 2 }, []));
        await givenUp('a transaction given up at its read', () => store.transaction(async (tx) => tx.put(untouched, { ...(await tx.get(untouched)), n: 9 }, [])));
        await givenUp('a transaction given up at its commit', () => store.transaction(async (tx) => tx.put(committed, { n: 1 }, [])), new RegExp(`transaction commit did not answer within callTimeoutMs \\(${DEADLINE_MS} ms\\): its outcome is unknown`));
        await givenUp('listDue', () => store.listDue(new Date(), 10));
        await givenUp('findKeys', () => store.findKeys({ kind: 'Order', property: 'n', equals: 'x', limit: 10 }));
      } finally {
        proxy.setMode('pass');
      }
      assert.ok(await eventually(() => store.read(read)), 'reachable again');
      await client.terminate(); // waits for the calls given up: whatever they were to write is written now
      const direct = new FirestoreStore(emulator.client(), NATIVE_EMULATOR_OPTIONS);
      assert.deepEqual(await direct.get(untouched), { n: 0 }, 'the transaction given up before its commit wrote nothing, then or later');
    });
  });
});

/** The result of `run` once it succeeds (a reconnecting client fails for a while), within 30 s. */
async function eventually<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= 150) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
