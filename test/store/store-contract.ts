/**
 * The store contract: what every `Store` must do, run against the in-memory store and against the
 * Datastore store on both emulators.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Datastore, Key } from '@google-cloud/datastore';
import { ContentionError, LeaseLostError, StoreRejectedError } from '../../src/errors/errors';
import type { LedgerRecord, Properties, Store, StoreTransaction } from '../../src/types';
import { withContentionRetry } from '../../src/locks/retry';
import type { RawValue } from '../support/emulator';
import { batchContract } from './store-batch-contract';

/**
 * How to look behind a Datastore store at what it really stored (value types, index settings),
 * and to store an entity without it (`datastoreRaw` in test/support/emulator.ts builds one on a
 * client). The checks that use it are Datastore's: a store without it skips them.
 */
export interface RawEntities {
  /** The entity's properties exactly as stored (value types and index exclusions); undefined when it does not exist. */
  properties(key: Key): Promise<Record<string, RawValue> | undefined>;
  /** Stores an entity directly, with these properties kept out of indexes (the Datastore client's paths: `tags[]`, `inner.secret`). */
  save(key: Key, data: Properties, excludeFromIndexes: string[]): Promise<void>;
}

/** A store under test, and how to look behind it. */
export interface ContractSubject {
  store: Store;
  /** What the store really stored, on the backend's own terms (Datastore only). */
  raw?: RawEntities;
  /**
   * True when reads take locks (Firestore in Datastore mode): a transaction that read an entity
   * may make another one's commit wait instead of losing to it.
   */
  lockingReads?: boolean;
}

/**
 * Makes a fresh subject whose outbox listing covers `namespaces` (the namespaces the test writes
 * in); a Datastore store is pinned to them so other suites' records don't show.
 */
export type MakeSubject = (namespaces: readonly string[]) => ContractSubject | Promise<ContractSubject>;

let counter = 0;

/** Fresh namespaces for one test. */
function namespacesFor(): [string, string] {
  counter += 1;
  const tag = `${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
  return [`contract-a-${tag}`, `contract-b-${tag}`];
}

function key(namespace: string, ...path: (string | number)[]): Key {
  return new Key({ namespace, path });
}

function record(namespace: string, id: string, due: Date, extra: Partial<LedgerRecord> = {}): LedgerRecord {
  return {
    id,
    key: key(namespace, 'Order', id),
    seq: 3,
    chain: 'chain-1',
    path: '/process',
    body: JSON.stringify({ note: id }),
    createdAt: new Date(due.getTime() - 60_000),
    task: id,
    sends: 1,
    sentAt: new Date(due.getTime() - 60_000),
    failures: 0,
    due,
    ...extra,
  };
}

/** The ids of the records due at `now`, as listed. */
async function dueIds(store: Store, now: number, limit = 10): Promise<string[]> {
  return (await store.listDue(new Date(now), limit)).records.map((r) => r.id);
}

/** A value a test can compare: keys as namespace and path. */
function keyShape(value: unknown): { namespace: string | undefined; path: unknown[] } {
  assert.ok(value instanceof Key, `expected a Key, got ${String(value)}`);
  return { namespace: value.namespace, path: value.path.map(String) };
}

/** Resolves once `count` callers have arrived. */
function barrier(count: number): () => Promise<void> {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return () => {
    arrived += 1;
    if (arrived === count) open();
    return opened;
  };
}

async function increment(store: Store, k: Key, afterRead?: () => Promise<void>): Promise<number> {
  return store.transaction(async (tx) => {
    const current = await tx.get(k);
    const n = typeof current?.n === 'number' ? current.n : 0;
    await afterRead?.();
    tx.put(k, { ...current, n: n + 1 }, []);
    return n + 1;
  });
}

async function putOne(store: Store, k: Key, properties: Properties, exclude: readonly string[] = []): Promise<void> {
  await store.transaction(async (tx) => tx.put(k, properties, exclude));
}

/** Runs the contract against the subjects `make` builds. */
export function storeContract(name: string, make: MakeSubject): void {
  // Its five parts run side by side (each test writes namespaces of its own), the tests of a part one
  // at a time: on an emulator most of a test's time is round trips, so one part's overlap another's.
  describe(`${name}: store contract`, { concurrency: true }, () => {
    describe('reads and writes', { concurrency: 1 }, () => {
      it('reads a missing key as undefined, outside and inside a transaction', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const missing = key(ns, 'Order', 'nobody');
        assert.equal(await store.get(missing), undefined);
        assert.equal(await store.transaction((tx) => tx.get(missing)), undefined);
      });

      it('rejects keys with neither an id nor a name', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const incomplete = new Key({ namespace: ns, path: ['Order'] });
        await assert.rejects(store.get(incomplete), TypeError);
        await assert.rejects(
          store.transaction(async (tx) => tx.put(incomplete, { a: 1 }, [])),
          (err: Error) => err instanceof TypeError && /neither an id nor a name/.test(err.message),
        );
      });

      it('round-trips every property type, also through a read and a write back', async () => {
        const [ns] = namespacesFor();
        const { store, raw } = await make([ns]);
        const k = key(ns, 'Order', 'types');
        const ref = key(ns, 'Customer', 7, 'Address', 'home');
        const when = new Date('2024-05-06T07:08:09.123Z');
        await putOne(store, k, everyType(ref, when));
        checkEveryType(await store.get(k), ref, when);

        // What the Locker does: read, change lock fields, write everything back.
        await store.transaction(async (tx) => {
          const read = await tx.get(k);
          assert.ok(read);
          tx.put(k, { ...read, lock_seq: 2, lock_req: 'attempt-1' }, ['lock_seq', 'lock_req']);
        });
        const after = await store.get(k);
        checkEveryType(after, ref, when);
        assert.equal(after?.lock_seq, 2);

        if (raw) {
          const stored = await raw.properties(k);
          assert.ok(stored);
          assert.equal(stored.whole?.valueType, 'doubleValue', 'a double 1.0 stays a double');
          assert.equal(stored.half?.valueType, 'doubleValue');
          assert.equal(stored.count?.valueType, 'integerValue');
          assert.equal(stored.big?.valueType, 'integerValue');
          assert.equal(String(stored.big?.integerValue), '9007199254740993');
          assert.deepEqual(
            stored.list?.arrayValue?.values.map((v) => v.valueType),
            ['integerValue', 'doubleValue', 'stringValue', 'nullValue'],
          );
          const embedded = stored.embedded?.entityValue?.properties;
          assert.equal(embedded?.ratio?.valueType, 'doubleValue', 'an embedded double 2.0 stays a double');
          assert.equal(stored.place?.valueType, 'geoPointValue', 'a geo point stays a geo point');
          assert.equal(stored.ref?.valueType, 'keyValue');
          assert.equal(stored.when?.valueType, 'timestampValue');
          assert.equal(stored.bytes?.valueType, 'blobValue');
          assert.equal(stored.nothing?.valueType, 'nullValue');
        }
      });

      it('keeps what was unindexed unindexed when an entity is read and written back', async (t) => {
        const [ns] = namespacesFor();
        const { store, raw } = await make([ns]);
        if (!raw) return t.skip('index settings exist only in Datastore');
        const k = key(ns, 'Order', 'indexes-kept');
        await raw.save(k, { note: 'quiet', tags: ['a', 'b'], inner: { secret: 's', shown: 'v' }, label: 'loud' }, ['note', 'tags[]', 'inner.secret']);
        await store.transaction(async (tx) => {
          const read = await tx.get(k);
          tx.put(k, { ...read, lock_seq: 1 }, ['lock_seq']);
        });
        const stored = await raw.properties(k);
        assert.ok(stored);
        assert.equal(stored.note?.excludeFromIndexes, true);
        assert.deepEqual(stored.tags?.arrayValue?.values.map((v) => v.excludeFromIndexes), [true, true]);
        assert.equal(stored.inner?.entityValue?.properties.secret?.excludeFromIndexes, true);
        assert.equal(stored.inner?.entityValue?.properties.shown?.excludeFromIndexes ?? false, false);
        assert.equal(stored.label?.excludeFromIndexes ?? false, false);
        assert.equal(stored.lock_seq?.excludeFromIndexes, true);
      });

      it('hands out unsafe integers as Int with every digit, safe ones as numbers', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'ints');
        await putOne(store, k, { big: Datastore.int('-9007199254740993'), small: Datastore.int('12'), n: 5 });
        const read = await store.get(k);
        assert.ok(Datastore.isInt(read?.big as object), 'an unsafe integer stays an Int');
        assert.equal((read?.big as { value: string }).value, '-9007199254740993');
        assert.equal(read?.small, 12);
        assert.equal(read?.n, 5);
      });

      it('excludes the named properties, long strings and large blobs from indexes', async (t) => {
        const [ns] = namespacesFor();
        const { store, raw } = await make([ns]);
        const k = key(ns, 'Order', 'indexes');
        const long = 'é'.repeat(1000); // 2000 bytes: too long to be indexed
        await putOne(
          store,
          k,
          { lock_req: 'a', lock_alerts: ['x', 'y'], lock_ts: new Date(0), label: 'indexed', long, blob: Buffer.alloc(2000, 7) },
          ['lock_req', 'lock_alerts', 'lock_ts'],
        );
        const read = await store.get(k);
        assert.equal(read?.long, long);
        assert.ok(Buffer.isBuffer(read?.blob) && read.blob.length === 2000);
        if (!raw) return t.skip('index settings exist only in Datastore');
        const stored = await raw.properties(k);
        assert.ok(stored);
        assert.equal(stored.lock_req?.excludeFromIndexes, true);
        assert.equal(stored.lock_ts?.excludeFromIndexes, true);
        assert.deepEqual(stored.lock_alerts?.arrayValue?.values.map((v) => v.excludeFromIndexes), [true, true]);
        assert.equal(stored.long?.excludeFromIndexes, true);
        assert.equal(stored.blob?.excludeFromIndexes, true);
        assert.equal(stored.label?.excludeFromIndexes ?? false, false);
      });

      it('copies values in and out: changing them later changes nothing stored', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'copies');
        const props = { tags: ['a'], nested: { n: 1 }, when: new Date(1000) };
        await store.transaction(async (tx) => {
          tx.put(k, props, []);
          props.tags.push('b');
          props.nested.n = 2;
          props.when.setTime(2000);
        });
        const read = await store.get(k);
        assert.deepEqual(read, { tags: ['a'], nested: { n: 1 }, when: new Date(1000) });
        (read?.tags as string[]).push('c');
        assert.deepEqual((await store.get(k))?.tags, ['a']);
      });

      it('leaves undefined properties out and refuses values Datastore cannot store', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'values');
        await putOne(store, k, { kept: 1, gone: undefined });
        assert.deepEqual(await store.get(k), { kept: 1 });
        class Money {
          constructor(readonly cents: number) {}
        }
        const unstorable = [{ f: () => 1 }, { nested: [[1]] }, { map: new Map() }, { set: new Set([1]) }, { n: 10n }, { money: new Money(5) }, { deep: { list: [{ inner: [[2]] }] } }, { when: new Date(Number.NaN) }];
        for (const bad of unstorable) {
          // The same class from every store, before anything is sent: writing it again fails again.
          await assert.rejects(
            store.transaction(async (tx) => tx.put(k, bad, [])),
            (err: Error) => err instanceof StoreRejectedError && err.message.includes(Object.keys(bad)[0]!),
            `refuses ${Object.keys(bad)[0]}`,
          );
        }
        assert.deepEqual(await store.get(k), { kept: 1 });
      });

      it('deletes entities; deleting a missing one is no error', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'doomed');
        await putOne(store, k, { a: 1 });
        await store.transaction(async (tx) => {
          assert.deepEqual(await tx.get(k), { a: 1 });
          tx.delete(k);
          tx.delete(key(ns, 'Order', 'never-existed'));
        });
        assert.equal(await store.get(k), undefined);
      });

      it('keeps namespaces and ancestors apart', async () => {
        const [a, b] = namespacesFor();
        const { store } = await make([a, b]);
        const keys = [
          key(a, 'Line', 'x'),
          key(b, 'Line', 'x'),
          key(a, 'Order', 1, 'Line', 'x'),
          key(a, 'Order', 2, 'Line', 'x'),
          key(a, 'Order', '1', 'Line', 'x'),
        ];
        await store.transaction(async (tx) => {
          keys.forEach((k, i) => tx.put(k, { i, self: k }, []));
        });
        for (const [i, k] of keys.entries()) {
          const read = await store.get(k);
          assert.equal(read?.i, i, `entity ${i}`);
          assert.deepEqual(keyShape(read?.self), keyShape(k));
        }
        const kept = await store.get(keys[2]!);
        assert.equal((kept?.self as Key).parent?.id !== undefined, true, 'a numeric ancestor id stays an id');
      });

      it('does not show a transaction its own uncommitted writes', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'own-writes');
        await putOne(store, k, { n: 1 });
        const seen = await store.transaction(async (tx) => {
          tx.put(k, { n: 2 }, []);
          return tx.get(k);
        });
        assert.deepEqual(seen, { n: 1 });
        assert.deepEqual(await store.get(k), { n: 2 });
      });

      it('refuses to use a transaction after it ended', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        let kept: StoreTransaction | undefined;
        await store.transaction(async (tx) => {
          kept = tx;
        });
        assert.ok(kept);
        assert.throws(() => kept?.put(key(ns, 'Order', 'late'), { a: 1 }, []), /already committed or rolled back/);
        assert.equal(await store.get(key(ns, 'Order', 'late')), undefined);
      });
    });

    describe('rollback', { concurrency: 1 }, () => {
      it('applies nothing when fn throws, and rethrows the very same error', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const existing = key(ns, 'Order', 'existing');
        const kept = key(ns, 'Order', 'kept');
        const fresh = key(ns, 'Order', 'fresh');
        // Written as a caller writes, retrying ContentionError: the legacy emulator, loaded and some
        // minutes old, aborts a commit to an entity group whose previous commit it is still applying
        // ("too much contention"), as Datastore may abort writes to one entity close together.
        await withContentionRetry(() => store.transaction(async (tx) => {
          tx.put(existing, { n: 1 }, []);
          tx.put(kept, { n: 1 }, []);
        }));
        for (const thrown of [new Error('user code failed'), new LeaseLostError('lease lost')]) {
          const rejection = store.transaction(async (tx) => {
            const read = await tx.get(existing);
            tx.put(existing, { n: (read?.n as number) + 1 }, []);
            tx.put(fresh, { n: 1 }, []);
            tx.delete(kept);
            tx.putLedger(record(ns, 'rolled-back', new Date(1000)));
            throw thrown;
          });
          await assert.rejects(rejection, (err) => err === thrown);
        }
        assert.deepEqual(await store.get(existing), { n: 1 });
        assert.deepEqual(await store.get(kept), { n: 1 });
        assert.equal(await store.get(fresh), undefined);
        assert.deepEqual(await dueIds(store, Date.now() + 60_000), []);
        // The rolled-back transaction holds nothing: the next one on the same entity commits, under
        // the contention retry every caller runs (five attempts within about 2 s: a lock the rolled-back
        // transaction kept, which Firestore holds for 60 s, still fails it).
        assert.equal(await withContentionRetry(() => increment(store, existing)), 2);
      });
    });

    describe('contention', { concurrency: 1 }, () => {
      it('never lets two transactions that read the same entity both commit', async () => {
        const [ns] = namespacesFor();
        const { store, lockingReads } = await make([ns]);
        const k = key(ns, 'Counter', 'race');
        await putOne(store, k, { n: 0 });
        const bothRead = barrier(2);
        const results = await Promise.allSettled([increment(store, k, bothRead), increment(store, k, bothRead)]);
        const committed = results.filter((r) => r.status === 'fulfilled');
        const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (lockingReads) {
          // Both hold read locks and wait for each other; the emulator's lock timeout aborts one, and
          // sometimes both. Never both commit.
          assert.ok(committed.length <= 1, 'at most one commits');
        } else {
          assert.equal(committed.length, 1, 'exactly one commits (first committer wins)');
        }
        for (const f of failed) assert.ok(f.reason instanceof ContentionError, `a loser gets ContentionError, not ${f.reason}`);
        assert.deepEqual(await store.get(k), { n: committed.length }, 'no lost update');
      });

      it('reports a lost update as ContentionError', async (t) => {
        const [ns] = namespacesFor();
        const { store, lockingReads } = await make([ns]);
        if (lockingReads) return t.skip('with locking reads the second writer waits instead of winning');
        const k = key(ns, 'Counter', 'lost-update');
        await putOne(store, k, { n: 0 });
        const slow = store.transaction(async (tx) => {
          const read = await tx.get(k);
          assert.equal(await increment(store, k), 1, 'another transaction commits meanwhile');
          tx.put(k, { n: (read?.n as number) + 1 }, []);
        });
        await assert.rejects(slow, ContentionError);
        assert.deepEqual(await store.get(k), { n: 1 });
      });

      it('counts every one of concurrent increments retried on contention', { timeout: 120_000 }, async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Counter', 'many');
        const n = 4;
        const retry = { attempts: 30, baseDelayMs: 10, maxDelayMs: 200 };
        await Promise.all(Array.from({ length: n }, () => withContentionRetry(() => increment(store, k), retry)));
        assert.deepEqual(await store.get(k), { n });
      });
    });

    describe('versioned reads and compare-and-swap', { concurrency: 1 }, () => {
      it('reads an entity with a version, a missing one as undefined, and hands out copies', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'versioned');
        assert.equal(await store.read(k), undefined);
        await putOne(store, k, { n: 1, tags: ['a'], whole: Datastore.double(3), big: Datastore.int('9007199254740993') });
        const snapshot = await store.read(k);
        assert.ok(snapshot, 'the entity is read');
        assert.notEqual(snapshot.version, undefined, 'with a version');
        assert.notEqual(snapshot.version, null);
        assert.deepEqual({ ...snapshot.properties, big: undefined }, { n: 1, tags: ['a'], whole: 3, big: undefined });
        assert.equal((snapshot.properties.big as { value: string }).value, '9007199254740993');
        (snapshot.properties.tags as string[]).push('b');
        assert.deepEqual((await store.read(k))?.properties.tags, ['a']);
        await assert.rejects(store.read(new Key({ namespace: ns, path: ['Order'] })), TypeError);
      });

      it('replaces an entity read at the current version, and chains replaces on the snapshots they return', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'chained');
        await putOne(store, k, { n: 0, note: 'kept' });
        let snapshot = await store.read(k);
        for (const n of [1, 2, 3]) {
          assert.ok(snapshot, `snapshot before replace ${n}`);
          snapshot = await store.replaceIfUnchanged(k, snapshot, { ...snapshot.properties, n }, ['n']);
          assert.ok(snapshot, `replace ${n} wrote`);
          assert.deepEqual(snapshot.properties, { n, note: 'kept' });
          assert.deepEqual(await store.get(k), { n, note: 'kept' });
        }
        assert.deepEqual((await store.read(k))?.properties, snapshot?.properties, 'the last snapshot is what a read finds');
      });

      it('hands back a snapshot that reads as a read would: numbers unwrapped, unsafe integers as Int', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'written-snapshot');
        await putOne(store, k, { n: 0 });
        const before = await store.read(k);
        assert.ok(before);
        const when = new Date('2024-05-06T07:08:09.123Z');
        const written = await store.replaceIfUnchanged(
          k,
          before,
          { whole: Datastore.double(2), big: Datastore.int('-9007199254740993'), small: Datastore.int('7'), when, list: [1, 'a'], inner: { x: 1.5 } },
          ['list'],
        );
        assert.ok(written);
        const read = await store.read(k);
        assert.ok(read);
        assert.deepEqual(written.properties, read.properties);
        assert.equal(written.properties.whole, 2);
        assert.equal(written.properties.small, 7);
        assert.ok(Datastore.isInt(written.properties.big as object));
        assert.equal((written.properties.big as { value: string }).value, '-9007199254740993');
      });

      it('copies values in and out: changing them later changes nothing stored', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'replace-copies');
        await putOne(store, k, { n: 0 });
        const before = await store.read(k);
        assert.ok(before);
        const props = { tags: ['a'], nested: { n: 1 } };
        const written = await store.replaceIfUnchanged(k, before, props, []);
        assert.ok(written);
        props.tags.push('b');
        props.nested.n = 2;
        (written.properties.tags as string[]).push('c');
        assert.deepEqual(await store.get(k), { tags: ['a'], nested: { n: 1 } });
      });

      it('refuses a stale snapshot after another replace, writing nothing', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'stale-replace');
        await putOne(store, k, { n: 0 });
        const first = await store.read(k);
        assert.ok(first);
        const second = await store.replaceIfUnchanged(k, first, { n: 1 }, []);
        assert.ok(second);
        assert.equal(await store.replaceIfUnchanged(k, first, { n: 99 }, []), undefined);
        assert.deepEqual(await store.get(k), { n: 1 });
        assert.ok(await store.replaceIfUnchanged(k, second, { n: 2 }, []), 'the fresh snapshot still works');
        assert.equal(await store.replaceIfUnchanged(k, second, { n: 99 }, []), undefined, 'a used snapshot is stale');
        assert.deepEqual(await store.get(k), { n: 2 });
      });

      it('refuses a stale snapshot after a transaction that read and wrote the entity', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Counter', 'stale-after-tx');
        await putOne(store, k, { n: 0 });
        const snapshot = await store.read(k);
        assert.ok(snapshot);
        assert.equal(await increment(store, k), 1);
        assert.equal(await store.replaceIfUnchanged(k, snapshot, { n: 99 }, []), undefined);
        assert.deepEqual(await store.get(k), { n: 1 });
      });

      it('refuses a stale snapshot after a transactional put that did not read', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'stale-after-put');
        await putOne(store, k, { n: 0 });
        const snapshot = await store.read(k);
        assert.ok(snapshot);
        await putOne(store, k, { n: 1 });
        assert.equal(await store.replaceIfUnchanged(k, snapshot, { n: 99 }, []), undefined);
        assert.deepEqual(await store.get(k), { n: 1 });
      });

      it('refuses a snapshot of an entity deleted since, and of one deleted and created again', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'deleted');
        await putOne(store, k, { n: 0 });
        const snapshot = await store.read(k);
        assert.ok(snapshot);
        await store.transaction(async (tx) => tx.delete(k));
        assert.equal(await store.replaceIfUnchanged(k, snapshot, { n: 1 }, []), undefined);
        assert.equal(await store.get(k), undefined, 'not created again');
        await putOne(store, k, { n: 0 });
        assert.equal(await store.replaceIfUnchanged(k, snapshot, { n: 1 }, []), undefined);
        assert.deepEqual(await store.get(k), { n: 0 });
      });

      it('lets exactly one of two concurrent replaces from the same snapshot write', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'race');
        await putOne(store, k, { by: 'nobody' });
        const snapshot = await store.read(k);
        assert.ok(snapshot);
        const results = await Promise.all(
          ['a', 'b'].map((by) => store.replaceIfUnchanged(k, snapshot, { by }, [])),
        );
        const winners = results.flatMap((result, i) => (result ? [['a', 'b'][i]] : []));
        assert.equal(winners.length, 1, `exactly one writes, not ${JSON.stringify(winners)}`);
        assert.deepEqual(await store.get(k), { by: winners[0] });
      });

      it('makes a transaction that read the entity before a replace fail with ContentionError', async (t) => {
        const [ns] = namespacesFor();
        const { store, lockingReads } = await make([ns]);
        if (lockingReads) return t.skip('with locking reads the replace waits for the transaction instead');
        const k = key(ns, 'Counter', 'replaced-under-tx');
        await putOne(store, k, { n: 0 });
        const slow = store.transaction(async (tx) => {
          const read = await tx.get(k);
          const snapshot = await store.read(k);
          assert.ok(snapshot);
          assert.ok(await store.replaceIfUnchanged(k, snapshot, { n: 10 }, []), 'the replace writes meanwhile');
          tx.put(k, { n: (read?.n as number) + 1 }, []);
        });
        await assert.rejects(slow, ContentionError);
        assert.deepEqual(await store.get(k), { n: 10 });
      });

      it('refuses a snapshot it did not make, an incomplete key and values Datastore cannot store', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = key(ns, 'Order', 'refused');
        await putOne(store, k, { n: 0 });
        const snapshot = await store.read(k);
        assert.ok(snapshot);
        await assert.rejects(store.replaceIfUnchanged(k, { properties: { n: 0 }, version: 'v1' }, { n: 1 }, []), TypeError);
        await assert.rejects(store.replaceIfUnchanged(new Key({ namespace: ns, path: ['Order'] }), snapshot, { n: 1 }, []), TypeError);
        await assert.rejects(store.replaceIfUnchanged(k, snapshot, { f: () => 1 }, []), StoreRejectedError);
        await assert.rejects(store.replaceIfUnchanged(k, snapshot, { n: 1n }, []), StoreRejectedError);
        assert.deepEqual(await store.get(k), { n: 0 });
        assert.ok(await store.replaceIfUnchanged(k, snapshot, { n: 1 }, []), 'the snapshot is still fresh');
      });

      it('keeps raw types and index settings through a read, a replace and a replace on its snapshot', async (t) => {
        const [ns] = namespacesFor();
        const { store, raw } = await make([ns]);
        if (!raw) return t.skip('value types and index settings exist only in Datastore');
        const k = key(ns, 'Order', 'faithful-replace');
        const long = 'é'.repeat(1000); // 2000 bytes: too long to be indexed
        await raw.save(k, { whole: Datastore.double(1), long, note: 'quiet', tags: ['a', 'b'], inner: { secret: 's', ratio: Datastore.double(2) }, label: 'loud' }, ['long', 'note', 'tags[]', 'inner.secret']);
        const check = async (step: string) => {
          const stored = await raw.properties(k);
          assert.ok(stored, step);
          assert.equal(stored.whole?.valueType, 'doubleValue', `${step}: a double 1.0 stays a double`);
          assert.equal(stored.inner?.entityValue?.properties.ratio?.valueType, 'doubleValue', `${step}: an embedded 2.0 too`);
          assert.equal(stored.long?.excludeFromIndexes, true, `${step}: a long string stays unindexed`);
          assert.equal(stored.note?.excludeFromIndexes, true, `${step}: an unindexed value stays unindexed`);
          assert.deepEqual(stored.tags?.arrayValue?.values.map((v) => v.excludeFromIndexes), [true, true], step);
          assert.equal(stored.inner?.entityValue?.properties.secret?.excludeFromIndexes, true, step);
          assert.equal(stored.label?.excludeFromIndexes ?? false, false, `${step}: an indexed value stays indexed`);
          assert.equal(stored.lock_seq?.excludeFromIndexes, true, `${step}: the named property is unindexed`);
          assert.equal(stored.lock_seq?.valueType, 'integerValue', step);
        };
        const read = await store.read(k);
        assert.ok(read);
        assert.equal(read.properties.whole, 1);
        const first = await store.replaceIfUnchanged(k, read, { ...read.properties, lock_seq: 1 }, ['lock_seq']);
        assert.ok(first);
        await check('after a replace');
        const second = await store.replaceIfUnchanged(k, first, { ...first.properties, lock_seq: 2 }, ['lock_seq']);
        assert.ok(second);
        await check('after a replace on its snapshot');
        assert.equal(second.properties.lock_seq, 2);
        assert.equal(second.properties.long, long);
      });
    });

    batchContract(make);

    describe('the ledger', { concurrency: 1 }, () => {
      it('commits a record with the entity, in the same transaction, and reads it back whole', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const k = new Key({ namespace: ns, path: ['Shop', 'north', 'Order', Datastore.int('9223372036854775807')] });
        const rec = record(ns, 'task-with-entity', new Date('2024-01-01T00:10:00.000Z'), {
          key: k,
          scheduleTime: new Date('2024-01-01T00:05:00.000Z'),
          body: 'x'.repeat(5000),
          sends: 3,
          failures: 2,
          task: 'task-with-entity-s3-abc',
        });
        await store.transaction(async (tx) => {
          tx.put(k, { lock_seq: 3 }, ['lock_seq']);
          tx.putLedger(rec);
        });
        assert.deepEqual(await store.get(k), { lock_seq: 3 });
        const listed = (await store.listDue(new Date('2025-01-01T00:00:00.000Z'), 10)).records;
        assert.equal(listed.length, 1);
        const read = await store.transaction((tx) => tx.getLedger(k, rec.id));
        for (const found of [listed[0]!, read!]) {
          assert.deepEqual(keyShape(found.key), keyShape(k));
          assert.equal(found.key.path[3]?.toString(), '9223372036854775807', 'a 2^63-1 id keeps every digit');
          assert.deepEqual({ ...found, key: undefined }, { ...rec, key: undefined });
        }
      });

      it('lists the records due, oldest due first, at most limit, across namespaces', async () => {
        const [a, b] = namespacesFor();
        const { store } = await make([a, b]);
        const t0 = Date.parse('2024-02-01T00:00:00.000Z');
        const records = [
          record(a, 'third', new Date(t0 + 3000)),
          record(b, 'first', new Date(t0 + 1000)),
          record(a, 'second', new Date(t0 + 2000)),
        ];
        await store.transaction(async (tx) => records.slice(0, 2).forEach((r) => tx.putLedger(r)));
        await store.transaction(async (tx) => tx.putLedger(records[2]!));
        assert.deepEqual(await dueIds(store, t0 + 60_000), ['first', 'second', 'third']);
        assert.deepEqual(await dueIds(store, t0 + 60_000, 2), ['first', 'second']);
        assert.deepEqual(await dueIds(store, t0 + 2000), ['first', 'second'], 'due at now is due');
        assert.deepEqual(await dueIds(store, t0 + 999), []);
        const [first] = (await store.listDue(new Date(t0 + 60_000), 1)).records;
        assert.equal(first?.key.namespace, b);
        assert.equal(first?.scheduleTime, undefined, 'no schedule time stays none');
      });

      it('replaces a record under its id, and moves it in the order by its new due time', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const t0 = Date.parse('2024-04-01T00:00:00.000Z');
        await store.transaction(async (tx) => {
          tx.putLedger(record(ns, 'early', new Date(t0 + 1000)));
          tx.putLedger(record(ns, 'late', new Date(t0 + 2000)));
        });
        await store.transaction(async (tx) => {
          const early = await tx.getLedger(key(ns, 'Order', 'early'), 'early');
          assert.ok(early);
          tx.putLedger({ ...early, due: new Date(t0 + 3000), sends: 2, task: 'early-s2' });
        });
        assert.deepEqual(await dueIds(store, t0 + 60_000), ['late', 'early']);
        const [, moved] = (await store.listDue(new Date(t0 + 60_000), 10)).records;
        assert.equal(moved?.task, 'early-s2');
        assert.equal(moved?.sends, 2);
      });

      it('deletes records idempotently in a transaction', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const t0 = Date.parse('2024-03-01T00:00:00.000Z');
        const one = record(ns, 'to-delete', new Date(t0));
        const two = record(ns, 'deleted-in-tx', new Date(t0));
        await store.transaction(async (tx) => { tx.putLedger(one); tx.putLedger(two); });
        assert.equal((await store.listDue(new Date(t0), 10)).records.length, 2);
        await store.transaction(async (tx) => { tx.deleteLedger(one.key, one.id); tx.deleteLedger(one.key, 'never-written'); });
        await store.transaction(async (tx) => { tx.deleteLedger(one.key, one.id); });
        await store.transaction(async (tx) => { tx.deleteLedger(two.key, two.id); });
        assert.deepEqual(await dueIds(store, t0), []);
        assert.equal(await store.transaction((tx) => tx.getLedger(two.key, two.id)), undefined);
      });

      it('retireLedgerMany removes the records their entities no longer need, in two namespaces, and keeps the others', async () => {
        const [ns, other] = namespacesFor();
        const { store } = await make([ns, other]);
        assert.ok(store.retireLedgerMany, 'the store removes records in groups');
        const t0 = Date.parse('2024-03-02T00:00:00.000Z');
        const gone = [record(ns, 'many-1', new Date(t0)), record(ns, 'many-2', new Date(t0)), record(other, 'many-3', new Date(t0))];
        const kept = record(ns, 'many-kept', new Date(t0));
        const untouched = record(ns, 'many-not-named', new Date(t0));
        // many-1 has no entity; the others' entities say (property `keep`) whether they need their record.
        await store.transaction(async (tx) => {
          for (const r of [...gone, kept, untouched]) tx.putLedger(r);
          tx.put(gone[1]!.key, { keep: false, task: 'many-2' }, []);
          tx.put(gone[2]!.key, { keep: false, task: 'many-3' }, []);
          tx.put(kept.key, { keep: true, task: 'many-kept' }, []);
        });
        const asked: string[] = [];
        const needed = (entity: Properties | undefined, id: string): boolean => {
          asked.push(`${id}:${entity === undefined ? 'absent' : String(entity.task)}`);
          return entity?.keep === true;
        };
        const named = [...gone, kept].map((r) => ({ key: r.key, id: r.id }));
        await store.retireLedgerMany(
          [...named, named[0]!, { key: kept.key, id: 'never-written' }],
          needed,
        );
        await store.retireLedgerMany([], needed);
        assert.deepEqual((await dueIds(store, t0)).sort(), ['many-kept', 'many-not-named'], 'the records whose entities need them, and those not named, are left');
        assert.deepEqual([...new Set(asked)].sort(), ['many-1:absent', 'many-2:many-2', 'many-3:many-3', 'many-kept:many-kept'], 'each record found is judged on its own entity as stored');
      });

      it('retireLedgerMany removes a record named with its version only while it is still at that version, without asking needed', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        assert.ok(store.readWithLedger && store.retireLedgerMany, 'the store reads a record with its version and removes records in groups');
        const t0 = Date.parse('2024-03-03T00:00:00.000Z');
        const same = record(ns, 'versioned-same', new Date(t0));
        const again = record(ns, 'versioned-again', new Date(t0));
        await store.transaction(async (tx) => { tx.putLedger(same); tx.putLedger(again); });
        const [readSame, readAgain] = [await store.readWithLedger(same.key, same.id), await store.readWithLedger(again.key, again.id)];
        assert.notEqual(readSame.recordVersion, undefined, 'the record\'s version is read with it');
        assert.equal((await store.readWithLedger(same.key, 'never-written')).recordVersion, undefined, 'a missing record has no version');
        // `again` is written again (its step scheduled again) after it was read.
        await store.transaction(async (tx) => tx.putLedger({ ...again, body: '{"again":true}' }));
        const asked: string[] = [];
        await store.retireLedgerMany([
          { key: same.key, id: same.id, version: readSame.recordVersion },
          { key: again.key, id: again.id, version: readAgain.recordVersion },
        ], (_, id) => { asked.push(id); return true; });
        assert.deepEqual(asked, [], 'a record named with its version is not judged');
        assert.deepEqual(await dueIds(store, t0), ['versioned-again'], 'the record still at its version is removed; the one written again stays');
        assert.equal((await store.transaction((tx) => tx.getLedger(again.key, again.id)))?.body, '{"again":true}');
      });

      it('reports a malformed record instead of throwing, and still lists the others', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const t0 = Date.parse('2024-05-01T00:00:00.000Z');
        const bad = new Key({ namespace: ns, path: ['LockerOutbox', 'not-a-record'] });
        await store.transaction(async (tx) => {
          tx.put(bad, { due: new Date(t0), seq: 'three', body: 'x' }, []);
          tx.putLedger(record(ns, 'good', new Date(t0 + 1)));
        });
        const found = await store.listDue(new Date(t0 + 10), 10);
        assert.deepEqual(found.records.map((r) => r.id), ['good']);
        assert.equal(found.malformed.length, 1);
        assert.match(found.malformed[0]!, /not-a-record: its key is missing/);
        assert.equal(await store.transaction((tx) => tx.getLedger(new Key({ namespace: ns, path: ['X', 1] }), 'not-a-record')), undefined);
      });

      it('does not count malformed records toward the limit: the well-formed ones due after them are still listed', async () => {
        const [ns] = namespacesFor();
        const { store } = await make([ns]);
        const t0 = Date.parse('2024-06-01T00:00:00.000Z');
        // Five malformed records due first, then three good ones; a limit of three.
        await store.transaction(async (tx) => {
          for (let i = 0; i < 5; i++) tx.put(new Key({ namespace: ns, path: ['LockerOutbox', `broken-${i}`] }), { due: new Date(t0 + i), seq: 'x' }, []);
          for (let i = 0; i < 3; i++) tx.putLedger(record(ns, `good-${i}`, new Date(t0 + 100 + i)));
        });
        const found = await store.listDue(new Date(t0 + 1_000), 3);
        assert.deepEqual(found.records.map((r) => r.id), ['good-0', 'good-1', 'good-2']);
        assert.equal(found.malformed.length, 5);
        // The limit still bounds the well-formed records.
        assert.deepEqual((await store.listDue(new Date(t0 + 1_000), 2)).records.map((r) => r.id), ['good-0', 'good-1']);
      });
    });
  });
}

/** One property of each type a store must keep. */
function everyType(ref: Key, when: Date): Properties {
  return {
    text: 'hello',
    empty: '',
    long: 'x'.repeat(2000),
    count: 42,
    negative: -7,
    half: 0.5,
    whole: Datastore.double(1),
    big: Datastore.int('9007199254740993'),
    yes: true,
    no: false,
    nothing: null,
    when,
    bytes: Buffer.from([0, 1, 2, 255]),
    list: [1, Datastore.double(2), 'three', null],
    embedded: { name: 'inner', ratio: Datastore.double(2), deeper: { at: when, tags: ['a', 'b'] } },
    ref,
    place: Datastore.geoPoint({ latitude: 52.37, longitude: 4.89 }),
  };
}

function checkEveryType(read: Properties | undefined, ref: Key, when: Date): void {
  assert.ok(read, 'the entity exists');
  assert.equal(read.text, 'hello');
  assert.equal(read.empty, '');
  assert.equal(read.long, 'x'.repeat(2000));
  assert.equal(read.count, 42);
  assert.equal(read.negative, -7);
  assert.equal(read.half, 0.5);
  assert.equal(read.whole, 1, 'a double 1.0 reads as the number 1');
  assert.ok(Datastore.isInt(read.big as object), 'an integer beyond 2^53 reads as an Int');
  assert.equal((read.big as { value: string }).value, '9007199254740993');
  assert.equal(read.yes, true);
  assert.equal(read.no, false);
  assert.equal(read.nothing, null);
  assert.ok(read.when instanceof Date && read.when.getTime() === when.getTime());
  assert.ok(Buffer.isBuffer(read.bytes) && read.bytes.equals(Buffer.from([0, 1, 2, 255])));
  assert.deepEqual(read.list, [1, 2, 'three', null]);
  assert.deepEqual(read.embedded, { name: 'inner', ratio: 2, deeper: { at: when, tags: ['a', 'b'] } });
  assert.deepEqual(keyShape(read.ref), keyShape(ref));
  assert.ok(Datastore.isGeoPoint(read.place as object));
  assert.deepEqual((read.place as { value: unknown }).value, { latitude: 52.37, longitude: 4.89 });
}
