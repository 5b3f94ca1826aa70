/**
 * `FirestoreStore`: the `Store` port over `@google-cloud/firestore`, for a database in **Native
 * mode** (a Datastore-mode database refuses the Firestore API, and the reverse). Keys stay
 * Datastore `Key` objects at the port; the store maps each to a document path (`paths.ts`: kind
 * → collection, name or `#`id → document, ancestors → subcollections, a namespace → the
 * subcollections of `LockerNamespaces/<namespace>`). Values round-trip as on Datastore
 * (`values.ts`, with what Firestore cannot keep).
 *
 * - The lock fields live on the user's own document, with the names they have on a Datastore
 *   entity (`lock_ts`, `lock_req`, `lock_seq`, ...).
 * - The library's records are documents in collections of its own, the kinds the Datastore store
 *   uses, as collection ids, in the entity's namespace: the ledger in `LockerOutbox`, bulk
 *   kickoffs' markers in `LockerKickoff` and their runs in `LockerKickoffRun`, fan-out in
 *   `LockerFanOut`, `LockerFanOutChild`, `LockerFanOutPage` and `LockerFanOutDone`, recurring
 *   work in `LockerSchedule` and `LockerRecurringRun`, bulk operations in `LockerOperation`; the
 *   backend check's scratch documents in `LockerProbe` (deleted at once).
 * - A read is one `get()` or `getAll()`; its version is the document's `updateTime`
 *   (`version.ts`). Compare-and-swap is one write with no transaction: `update()` with a
 *   `lastUpdateTime` precondition, `create()` for an absent document (`replace.ts`), once a check
 *   found that the backend refuses a stale precondition (`preconditions.ts`).
 * - `transaction()` runs one attempt of a Firestore transaction (`transaction.ts`); contention
 *   (ABORTED, the emulator's and the service's lock timeouts under pessimistic locking) is a
 *   `ContentionError` (`errors.ts`), which the Locker retries whole.
 * - Deadline: every call to Firestore ends within `callTimeoutMs` (default 5,000 ms), else it is
 *   given up as a `StoreUnavailableError` (`deadline.ts`: the client has no per-call deadline of
 *   its own, and a write given up may still apply, which the Locker's fenced writes make safe).
 *   A transaction is bounded call by call, as on `DatastoreStore`: each read inside it, and its
 *   commit (`runTransaction` in `transaction.ts`).
 * - The queries and the indexes they need: `queries.ts`.
 *
 * Index exclusions have no meaning here (Firestore indexes every field unless an exemption says
 * otherwise): `excludeFromIndexes` is accepted and ignored. A document holds at most 1 MiB, as an
 * entity does; a write over it is a `StoreRejectedError`.
 */
import type { Key } from '@google-cloud/datastore';
import type { DocumentReference, Firestore } from '@google-cloud/firestore';
import type { KeyType } from '../../keys/key-type';
import { ConfigError, StoreConfigError } from '../../errors/errors';
import { rejectUnknownOptions, type OptionNames } from '../../config/option-names';
import type {
  ConditionalOutcome, ConditionalWrite, DueLedger, KeyQuery, LedgerLookup, LedgerNeeded, LedgerRecord, LedgerRef, LockCount,
  LockCountQuery, LockPage, LockQuery, Properties, RecordQuery, Snapshot, StepRead, Store, StoreTransaction, VersionedRead,
} from '../../types';
import { LEDGER_KIND, ledgerKey, readLedger } from '../ledger-entity';
import { readMany, replaceMany } from './batch';
import { call, isConflict, toStoreError } from './errors';
import { checkCallTimeout, DEFAULT_CALL_TIMEOUT_MS, withDeadline } from './deadline';
import { documentOf } from './paths';
import { documentKeys } from './document-keys';
import { countLocks, findKeys, listDue, listRecords, queryLocks, type Scope } from './queries';
import { checkPreconditions } from './preconditions';
import { replacement } from './replace';
import { retireLedgerMany } from './retire';
import { runTransaction } from './transaction';
import { asRead, fromDocument, toDocument } from './values';
import { DocumentVersion, documentVersion } from './version';

/** Options of {@link FirestoreStore}. */
export interface FirestoreStoreOptions {
  /** The project id keys are encoded with (the `app` of a url-safe key). Defaults to `GOOGLE_CLOUD_PROJECT` or `GCLOUD_PROJECT`, else none. */
  projectId?: string;
  /**
   * The namespaces the sweep (`listDue`) and fan-out's sweep (`findKeys` without a namespace)
   * look in. Defaults to every namespace: one collection-group query, which needs the
   * collection-group index of `due` (see `queries.ts`).
   */
  namespaces?: readonly string[];
  /**
   * How long one call to Firestore may take, ms, the client's own retries included; then it is
   * given up and fails with `StoreUnavailableError` (a write given up may still apply). A
   * positive integer. Defaults to 5000.
   */
  callTimeoutMs?: number;
}

const OPTION_NAMES: OptionNames<FirestoreStoreOptions> = { projectId: true, namespaces: true, callTimeoutMs: true };

/**
 * The {@link Store} port over a Firestore database in Native mode, keyed by Datastore `Key`s: what
 * {@link FirestoreStore} is without its key type. Internal: the library's own suites drive it with
 * the `Key`s they share with the other stores.
 */
export class FirestoreKeyStore implements Store {
  readonly projectId?: string;
  private readonly scope: Scope;
  private readonly ledgerKind = LEDGER_KIND;
  /** The deadline of each call to Firestore, ms (`deadline.ts`). */
  private readonly timeoutMs: number;
  /** The backend check's finding (`preconditions.ts`), once it ran; forgotten when it could not run. */
  private preconditions?: Promise<void>;

  constructor(protected readonly firestore: Firestore, options: FirestoreStoreOptions = {}) {
    if (typeof firestore?.collection !== 'function' || typeof firestore.runTransaction !== 'function') {
      throw new ConfigError('FirestoreStore needs a Firestore client from @google-cloud/firestore: new FirestoreStore(new Firestore())');
    }
    rejectUnknownOptions('FirestoreStore', options, OPTION_NAMES);
    const projectId = options.projectId ?? process.env.GOOGLE_CLOUD_PROJECT ?? process.env.GCLOUD_PROJECT;
    if (projectId) this.projectId = projectId;
    if (options.namespaces !== undefined && options.namespaces.length === 0) {
      throw new ConfigError('FirestoreStore: namespaces, when given, names at least one namespace ("" is the default one)');
    }
    this.scope = options.namespaces ? [...options.namespaces] : 'all';
    this.timeoutMs = checkCallTimeout(options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS);
  }

  /**
   * Checks, once, that the database refuses a write at a stale `updateTime` (`preconditions.ts`):
   * run before the first compare-and-swap; a `StoreConfigError` when it does not.
   */
  checkPreconditions(): Promise<void> {
    if (!this.preconditions) {
      const check = checkPreconditions(this.firestore, this.timeoutMs);
      this.preconditions = check;
      check.catch((error: unknown) => {
        if (!(error instanceof StoreConfigError)) this.preconditions = undefined;
      });
    }
    return this.preconditions;
  }

  /** One attempt of a Firestore transaction, each of its calls within the deadline (`runTransaction` in `transaction.ts`). */
  transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return runTransaction(this.firestore, this.ledgerKind, this.timeoutMs, fn);
  }

  async get(key: Key): Promise<Properties | undefined> {
    const ref = documentOf(this.firestore, key);
    const data = (await call('lookup', this.timeoutMs, () => ref.get())).data();
    return data && fromDocument(data);
  }

  async read(key: Key): Promise<Snapshot | undefined> {
    const ref = documentOf(this.firestore, key);
    const snapshot = await call('lookup', this.timeoutMs, () => ref.get());
    const data = snapshot.data();
    return data && { properties: fromDocument(data), version: new DocumentVersion(snapshot.updateTime, Object.keys(data)) };
  }

  /** The entity and its step's ledger record, in one `getAll` (see `Store.readWithLedger`). */
  async readWithLedger(key: Key, id: string): Promise<StepRead> {
    const refs = [documentOf(this.firestore, key), documentOf(this.firestore, ledgerKey(this.ledgerKind, key.namespace, id))] as const;
    const [entity, ledger] = await call('lookup', this.timeoutMs, () => this.firestore.getAll(...refs));
    const data = entity!.data();
    const stored = ledger!.data();
    const record = stored && readLedger(id, fromDocument(stored));
    return {
      snapshot: data && { properties: fromDocument(data), version: new DocumentVersion(entity!.updateTime, Object.keys(data)) },
      record: record && !('malformed' in record) ? record : undefined,
      ...(stored ? { recordVersion: new DocumentVersion(ledger!.updateTime, Object.keys(stored)) } : {}),
    };
  }

  /** Many ledger records in one `getAll` (see `Store.readLedgerMany`). */
  async readLedgerMany(refs: readonly LedgerLookup[]): Promise<(LedgerRecord | undefined)[]> {
    if (refs.length > 1_000) throw new RangeError('readLedgerMany reads at most 1,000 records a call');
    if (refs.length === 0) return [];
    const docs = refs.map(({ key, id }) => documentOf(this.firestore, ledgerKey(this.ledgerKind, key.namespace, id)));
    const snapshots = await call('lookup', this.timeoutMs, () => this.firestore.getAll(...docs));
    return snapshots.map((snapshot, i) => {
      const data = snapshot.data();
      const record = data && readLedger(refs[i]!.id, fromDocument(data));
      return record && !('malformed' in record) ? record : undefined;
    });
  }

  async replaceIfUnchanged(key: Key, snapshot: Snapshot, properties: Properties, _excludeFromIndexes: readonly string[]): Promise<Snapshot | undefined> {
    const version = documentVersion(snapshot?.version, 'replaceIfUnchanged');
    if (version.updateTime === undefined) throw new TypeError('replaceIfUnchanged needs a snapshot of an entity that exists');
    const ref = documentOf(this.firestore, key);
    const data = toDocument(this.firestore, properties);
    const [field, value, ...rest] = replacement(data, version);
    await this.checkPreconditions();
    try {
      const written = await withDeadline('conditional write', this.timeoutMs, () => ref.update(field, value, ...rest, { lastUpdateTime: version.updateTime }));
      return { properties: asRead(properties), version: new DocumentVersion(written.writeTime, Object.keys(data)) };
    } catch (error) {
      if (isConflict(error)) return undefined;
      throw toStoreError('conditional write', error);
    }
  }

  readMany(keys: readonly Key[]): Promise<VersionedRead[]> {
    return readMany(this.firestore, this.timeoutMs, keys);
  }

  async replaceMany(writes: readonly ConditionalWrite[]): Promise<ConditionalOutcome[]> {
    if (writes.length > 0) await this.checkPreconditions();
    return replaceMany(this.firestore, this.timeoutMs, this.ledgerKind, writes);
  }

  listDue(now: Date, limit: number): Promise<DueLedger> {
    return listDue(this.firestore, this.timeoutMs, this.ledgerKind, this.scope, now, limit);
  }

  async retireLedgerMany(records: readonly LedgerRef[], needed: LedgerNeeded): Promise<void> {
    if (records.length > 0) await this.checkPreconditions();
    return retireLedgerMany(this.firestore, this.timeoutMs, this.ledgerKind, records, needed);
  }

  queryLocks(query: LockQuery): Promise<LockPage> {
    return queryLocks(this.firestore, this.timeoutMs, query);
  }

  countLocks(query: LockCountQuery): Promise<LockCount> {
    return countLocks(this.firestore, this.timeoutMs, query);
  }

  listRecords(query: RecordQuery): Promise<LockPage> {
    return listRecords(this.firestore, this.timeoutMs, query);
  }

  findKeys(query: KeyQuery): Promise<Key[]> {
    return findKeys(this.firestore, this.timeoutMs, query, this.scope);
  }
}

/**
 * A {@link Store} over a Firestore database in Native mode. The Locker built on it takes and hands
 * out `DocumentReference`s of this client (`firestore.doc('Order/o-1')`) where a Datastore store's
 * takes `Key`s: its key type (`document-keys.ts`).
 */
export class FirestoreStore extends FirestoreKeyStore {
  /** `DocumentReference`s of this store's client, as the Locker's keys. */
  readonly keyType: KeyType<DocumentReference>;

  constructor(firestore: Firestore, options: FirestoreStoreOptions = {}) {
    super(firestore, options);
    this.keyType = documentKeys(firestore);
  }
}
