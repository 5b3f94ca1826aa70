/**
 * The in-memory store: the embedded default for local runs, demos and tests, with the transaction
 * semantics of Datastore's optimistic mode.
 *
 * - Reads inside a transaction see committed data only (not the transaction's own writes) and
 *   record the version of each entity they read; writes are buffered until commit.
 * - Commit fails with `ContentionError`, applying nothing, when an entity the transaction read was
 *   changed by another commit since it was read, or an entity it wrote without reading was changed
 *   since the transaction began: the first committer wins.
 * - `read` hands out an entity with its version (the number of the commit that last wrote it);
 *   `replaceIfUnchanged` writes only while the entity is still at that version, as one commit of
 *   its own: it changes the version, so a transaction that read the entity before fails its
 *   commit, and a transaction's commit makes every older snapshot stale.
 * - A throwing `fn` rolls back (nothing is applied) and its error is rethrown unchanged.
 * - Values are deep-copied in and out, and handed out the way a Datastore read hands them out
 *   (`Datastore.double` as a plain number, safe `Datastore.int` as a plain number).
 * - Failures can be injected (`fault`, `failNext`) to test how callers live through an outage.
 */
import type { Key } from '@google-cloud/datastore';
import { ContentionError, StoreUnavailableError } from '../../errors/errors';
import { rejectUnknownOptions, type OptionNames } from '../../config/option-names';
import type { ConditionalOutcome, ConditionalWrite, DueLedger, LedgerLookup, LedgerNeeded, LedgerRecord, LedgerRef, Properties, Snapshot, StepRead, Store, StoreTransaction, VersionedRead } from '../../types';
import { copyKey, keyString } from '../../keys/keys';
import { keyPath } from '../../keys/key-path';
import { dueFirst, LEDGER_KIND, LEDGER_UNINDEXED, ledgerKey, ledgerProperties, readLedger } from '../ledger-entity';
import { copyProperties } from '../values';
import type { LockCount, LockCountQuery, LockPage, LockQuery } from '../lock-query';
import { countMemory, queryMemory } from './query';
import { LockIndex } from './lock-index';
import { findMemoryKeys, type KeyQuery } from '../key-query';
import { listMemoryRecords, type RecordQuery } from '../record-query';

/** The operations a fault can be injected into. */
export type MemoryStoreOperation =
  | 'begin'
  | 'lookup'
  | 'commit'
  | 'get'
  | 'read'
  | 'replace'
  | 'readMany'
  | 'replaceMany'
  | 'listDue'
  | 'retireLedgerMany'
  | 'queryLocks'
  | 'countLocks'
  | 'listRecords'
  | 'findKeys';

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** The project id keys are encoded with. Defaults to none. */
  projectId?: string;
  /**
   * Consulted before every operation; an error it returns is thrown by that operation (a failed
   * `commit` applies nothing). Use `StoreUnavailableError` to simulate an outage and
   * `ContentionError` to simulate contention. Defaults to no faults.
   */
  fault?: (operation: MemoryStoreOperation) => Error | undefined;
}

/** Every option name of {@link MemoryStoreOptions}. */
const OPTION_NAMES: OptionNames<MemoryStoreOptions> = { projectId: true, fault: true };

interface Stored {
  key: Key;
  /** Undefined once deleted: the version still counts, so a delete conflicts like a write. */
  properties: Properties | undefined;
  version: number;
}

/** A buffered write: properties to store, or undefined to delete. */
interface Write {
  key: Key;
  properties: Properties | undefined;
}

/** What a transaction sees of its store. */
interface StoreView {
  /** Throws the injected or hooked error for `operation`, if any. */
  check(operation: MemoryStoreOperation): void;
  /** The version of an entity now: 0 if it was never written. */
  versionOf(id: string): number;
  /** Committed properties of an entity (not a copy). */
  stored(id: string): Properties | undefined;
}

/** An in-memory {@link Store} with Datastore's optimistic transaction semantics. */
export class MemoryStore implements Store {
  readonly projectId?: string;
  private readonly entities = new Map<string, Stored>();
  /** The locks by kind, namespace and state, ordered by `lock_ts` (`lock-index.ts`): lists and counts read it. */
  private readonly locks = new LockIndex();
  private readonly fault?: (operation: MemoryStoreOperation) => Error | undefined;
  private readonly injected: Error[] = [];
  /** Number of commits so far; an entity's version is the commit that last wrote it. */
  private clock = 0;
  /** What a transaction may see of this store. */
  private readonly view: StoreView = {
    check: (operation) => this.check(operation),
    versionOf: (id) => this.entities.get(id)?.version ?? 0,
    stored: (id) => this.entities.get(id)?.properties,
  };

  constructor(options: MemoryStoreOptions = {}) {
    rejectUnknownOptions('MemoryStore', options, OPTION_NAMES);
    if (options.projectId !== undefined) this.projectId = options.projectId;
    if (options.fault !== undefined) this.fault = options.fault;
  }

  /** Stores an entity (or its tombstone) and keeps the lock index in step. */
  private keep(id: string, stored: Stored): void {
    this.entities.set(id, stored);
    this.locks.update(id, stored.key, stored.properties);
  }

  /** Makes the next `count` operations (of any kind) throw `error`. */
  failNext(count: number, error: Error = new StoreUnavailableError('injected outage of the memory store')): void {
    for (let i = 0; i < count; i++) this.injected.push(error);
  }

  async transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    this.check('begin');
    const tx = new MemoryTransaction(this.view, this.clock);
    try {
      const result = await fn(tx);
      this.commit(tx);
      return result;
    } finally {
      tx.finish();
    }
  }

  async get(key: Key): Promise<Properties | undefined> {
    const id = keyString(key);
    this.check('get');
    return readOut(this.entities.get(id)?.properties);
  }

  async read(key: Key): Promise<Snapshot | undefined> {
    const id = keyString(key);
    this.check('read');
    const stored = this.entities.get(id);
    return stored?.properties && snapshotOf(stored.properties, stored.version);
  }

  /** The entity and its step's ledger record (see `Store.readWithLedger`). */
  async readWithLedger(key: Key, id: string): Promise<StepRead> {
    const snapshot = await this.read(key);
    const ledger = this.entities.get(keyString(ledgerKey(LEDGER_KIND, key.namespace, id)));
    const record = ledger?.properties ? readLedger(id, copyProperties(ledger.properties)) : undefined;
    return { snapshot, record: record && !('malformed' in record) ? record : undefined, ...(ledger?.properties ? { recordVersion: ledger.version } : {}) };
  }

  /** Many ledger records (see `Store.readLedgerMany`). */
  async readLedgerMany(refs: readonly LedgerLookup[]): Promise<(LedgerRecord | undefined)[]> {
    this.check('lookup');
    if (refs.length > 1_000) throw new RangeError('readLedgerMany reads at most 1,000 records a call');
    return refs.map(({ key, id }) => {
      const ledger = this.entities.get(keyString(ledgerKey(LEDGER_KIND, key.namespace, id)));
      const record = ledger?.properties ? readLedger(id, copyProperties(ledger.properties)) : undefined;
      return record && !('malformed' in record) ? record : undefined;
    });
  }

  /**
   * Writes `properties` if the entity is still at the snapshot's version. A failed `replace`
   * (injected fault) writes nothing.
   */
  async replaceIfUnchanged(
    key: Key,
    snapshot: Snapshot,
    properties: Properties,
    _excludeFromIndexes: readonly string[],
  ): Promise<Snapshot | undefined> {
    const id = keyString(key);
    const base = versionOf(snapshot);
    const copy = copyProperties(properties);
    this.check('replace');
    const stored = this.entities.get(id);
    if (!stored?.properties || stored.version !== base) return undefined;
    const version = ++this.clock;
    this.keep(id, { key: copyKey(key), properties: copy, version });
    return snapshotOf(copy, version);
  }

  /** Reads every key at once; a missing entity is absent at its version (0 if never written). */
  async readMany(keys: readonly Key[]): Promise<VersionedRead[]> {
    const ids = keys.map((key) => keyString(key));
    this.check('readMany');
    return ids.map((id, i) => {
      const stored = this.entities.get(id);
      return { key: copyKey(keys[i]!), properties: readOut(stored?.properties), version: stored?.version ?? 0 };
    });
  }

  /**
   * Writes each entity still at the version it was read at, with its ledger record, as one commit
   * of its own; a changed entity is a conflict, a value the store cannot hold an error. An
   * injected `replaceMany` fault fails the whole call and writes nothing.
   */
  async replaceMany(writes: readonly ConditionalWrite[]): Promise<ConditionalOutcome[]> {
    this.check('replaceMany');
    return writes.map((write) => {
      try {
        const id = keyString(write.read.key);
        const base = write.read.version;
        if (typeof base !== 'number' || !Number.isInteger(base) || base < 0) throw new TypeError('replaceMany needs reads that a MemoryStore made');
        const properties = copyProperties(write.properties);
        const ledger = ledgerKey(LEDGER_KIND, write.record.key.namespace, write.record.id);
        const record = copyProperties(ledgerProperties(write.record));
        if ((this.entities.get(id)?.version ?? 0) !== base) return { outcome: 'conflict' };
        const version = ++this.clock;
        this.keep(id, { key: copyKey(write.read.key), properties, version });
        this.keep(keyString(ledger), { key: ledger, properties: record, version });
        const marker = write.marker;
        const markerId = marker && keyString(marker.key);
        // The marker rides with its entity, while still at the version read (when one was).
        if (marker && (marker.read === undefined || (this.entities.get(markerId!)?.version ?? 0) === marker.read.version)) {
          this.keep(markerId!, { key: copyKey(marker.key), properties: copyProperties(marker.properties), version });
        }
        return { outcome: 'written' };
      } catch (error) {
        return { outcome: 'error', error: error instanceof Error ? error : new Error(String(error)) };
      }
    });
  }

  /**
   * Ledger records are entities of kind `LockerOutbox` in their step's namespace, as in Datastore;
   * the query reads every namespace, oldest due first.
   */
  async listDue(now: Date, limit: number): Promise<DueLedger> {
    this.check('listDue');
    const found: DueLedger = { records: [], malformed: [] };
    for (const stored of this.entities.values()) {
      if (!stored.properties || stored.key.kind !== LEDGER_KIND || stored.key.parent || stored.key.name === undefined) continue;
      const due = stored.properties.due;
      if (!(due instanceof Date) || due.getTime() > now.getTime()) continue;
      const record = readLedger(stored.key.name, readOut(stored.properties)!);
      if ('malformed' in record) found.malformed.push(`${stored.key.namespace ?? ''}:${stored.key.name}: ${record.malformed}`);
      else found.records.push(record);
    }
    found.records = found.records.sort(dueFirst).slice(0, Math.max(0, limit));
    return found;
  }

  /** Lockable entities by step state, ordered by `lock_ts`, as Datastore's indexed query answers. */
  async queryLocks(query: LockQuery): Promise<LockPage> {
    this.check('queryLocks');
    return queryMemory(this.locks, (id) => this.entities.get(id), query);
  }

  /** How many locks match, from the index: two binary searches, whatever the number of entities. */
  async countLocks(query: LockCountQuery): Promise<LockCount> {
    this.check('countLocks');
    return countMemory(this.locks, query);
  }

  /** Records of one kind, newest first by a time property (`record-query.ts`), at once consistent. */
  async listRecords(query: RecordQuery): Promise<LockPage> {
    this.check('listRecords');
    return listMemoryRecords(this.entities.values(), query, (p) => readOut(p)!);
  }

  /** Keys of the entities one property matches (`key-query.ts`), at once consistent. */
  async findKeys(query: KeyQuery): Promise<Key[]> {
    this.check('findKeys');
    return findMemoryKeys(this.entities.values(), query);
  }

  /**
   * Removes each record named that is still at the version given, or, named without one, that
   * `needed(entity, id)` says its entity, as stored now, no longer needs: each at once, as one
   * commit would (an injected fault removes none).
   */
  async retireLedgerMany(records: readonly LedgerRef[], needed: LedgerNeeded): Promise<void> {
    this.check('retireLedgerMany');
    for (const { key, id, version } of records) {
      const stringId = keyString(ledgerKey(LEDGER_KIND, key.namespace, id));
      const stored = this.entities.get(stringId);
      if (!stored?.properties) continue;
      const gone = version !== undefined ? stored.version === version : !needed(readOut(this.entities.get(keyString(key))?.properties), id);
      if (gone) this.keep(stringId, { key: stored.key, properties: undefined, version: ++this.clock });
    }
  }

  /** Throws the injected or hooked error for `operation`, if any. */
  private check(operation: MemoryStoreOperation): void {
    const error = this.injected.shift() ?? this.fault?.(operation);
    if (error) throw error;
  }

  private commit(tx: MemoryTransaction): void {
    this.check('commit');
    const conflict = tx.conflict();
    if (conflict) {
      throw new ContentionError(`transaction aborted: ${keyPath(conflict)} was changed by another transaction`);
    }
    const version = ++this.clock;
    for (const [id, write] of tx.writes) this.keep(id, { ...write, version });
  }
}

/** One transaction of a {@link MemoryStore}. */
class MemoryTransaction implements StoreTransaction {
  /** Versions of the entities read, by key string, as first read. */
  readonly reads = new Map<string, { key: Key; version: number }>();
  readonly writes = new Map<string, Write>();
  private finished = false;

  constructor(
    private readonly store: StoreView,
    /** The store's clock when the transaction began. */
    private readonly began: number,
  ) {}

  async get(key: Key): Promise<Properties | undefined> {
    this.checkOpen();
    const id = keyString(key);
    this.store.check('lookup');
    if (!this.reads.has(id)) this.reads.set(id, { key: copyKey(key), version: this.store.versionOf(id) });
    return readOut(this.store.stored(id));
  }

  async getMany(keys: readonly Key[]): Promise<(Properties | undefined)[]> {
    this.checkOpen();
    this.store.check('lookup');
    return keys.map((key) => {
      const id = keyString(key);
      if (!this.reads.has(id)) this.reads.set(id, { key: copyKey(key), version: this.store.versionOf(id) });
      return readOut(this.store.stored(id));
    });
  }

  put(key: Key, properties: Properties, _excludeFromIndexes: readonly string[]): void {
    this.checkOpen();
    this.writes.set(keyString(key), { key: copyKey(key), properties: copyProperties(properties) });
  }

  delete(key: Key): void {
    this.checkOpen();
    this.writes.set(keyString(key), { key: copyKey(key), properties: undefined });
  }

  async getLedger(key: Key, id: string): Promise<LedgerRecord | undefined> {
    const props = await this.get(ledgerKey(LEDGER_KIND, key.namespace, id));
    const record = props && readLedger(id, props);
    return record && !('malformed' in record) ? record : undefined;
  }

  putLedger(record: LedgerRecord): void {
    keyString(record.key);
    this.put(ledgerKey(LEDGER_KIND, record.key.namespace, record.id), ledgerProperties(record), LEDGER_UNINDEXED);
  }

  deleteLedger(key: Key, id: string): void {
    this.delete(ledgerKey(LEDGER_KIND, key.namespace, id));
  }

  /** The key of an entity changed by another commit after this transaction saw it, if any. */
  conflict(): Key | undefined {
    for (const [id, read] of this.reads) {
      if (this.store.versionOf(id) !== read.version) return read.key;
    }
    for (const [id, write] of this.writes) {
      if (!this.reads.has(id) && this.store.versionOf(id) > this.began) return write.key;
    }
    return undefined;
  }

  finish(): void {
    this.finished = true;
  }

  private checkOpen(): void {
    if (this.finished) throw new Error('this transaction has already committed or rolled back');
  }
}

function readOut(properties: Properties | undefined): Properties | undefined {
  return properties && copyProperties(properties, { unwrapNumbers: true });
}

/** A snapshot of stored properties: a copy as a read hands it out, and the version as a number. */
function snapshotOf(properties: Properties, version: number): Snapshot {
  return { properties: copyProperties(properties, { unwrapNumbers: true }), version };
}

/** The version of a snapshot a memory store made; a `TypeError` for any other. */
function versionOf(snapshot: Snapshot): number {
  const version: unknown = snapshot?.version;
  if (typeof version === 'number' && Number.isInteger(version) && version > 0) return version;
  throw new TypeError('replaceIfUnchanged needs a snapshot that a MemoryStore read or wrote');
}
