/**
 * The production store: Google Cloud Datastore (Firestore in Datastore mode, or the legacy
 * emulator), through the generated `v1.DatastoreClient` that `@google-cloud/datastore` exports.
 * You pass your `Datastore` client; the store makes a generated client from its options
 * (project, database, endpoint or `DATASTORE_EMULATOR_HOST`, credentials), or uses the one you
 * inject (`client`).
 *
 * Deadline. Every call to Datastore ends within `callTimeoutMs` (the client's retries of
 * UNAVAILABLE and DEADLINE_EXCEEDED included), so a hung or unreachable Datastore is a
 * `StoreUnavailableError` within seconds. Errors are classified once (`datastore-errors.ts`):
 * `ContentionError`, `StoreUnavailableError`, `StoreRejectedError` (this write will never succeed:
 * too large, too many index entries, a value Datastore cannot hold, refused before any call) and
 * `StoreConfigError` (its message says what to fix); what `fn` throws passes through unchanged.
 *
 * Transactions begin with their first lookup (`ReadOptions.newTransaction`), saving the
 * `beginTransaction` round trip, unless the backend mishandles that (see "The backend"); a failed
 * transaction is rolled back (rollback errors are ignored).
 *
 * Fidelity. The store encodes and decodes entities itself (`datastore-encode.ts`,
 * `datastore-protos.ts`), so an entity read and put back keeps every property's type and index
 * setting: integral doubles stay doubles, integers beyond 2^53 keep every digit (handed out as
 * `Datastore.int`), geo points stay geo points, unindexed values stay unindexed; a put also
 * excludes the names it is given, and strings and blobs too long to be indexed.
 *
 * Compare-and-swap. `read` is one lookup; its snapshot's opaque `version` holds the entity's
 * version (`EntityResult.version`) and the shape a faithful write-back needs. `replaceIfUnchanged`
 * is ONE non-transactional `commit` whose upsert carries `baseVersion` (`Mutation.base_version`):
 * the server applies it only if the entity is still at that version and otherwise reports
 * `conflictDetected`, which resolves to undefined. On a backend that ignores `baseVersion` it is a
 * transaction instead (`datastore-replace.ts`). Datastore may keep an entity's version across a
 * write that changes nothing, so a snapshot taken before such a write may stay fresh.
 *
 * The backend (`datastore-backend.ts`). Before its first compare-and-swap or transaction, the
 * store checks once per client, on a scratch entity of its own kind that it removes again, that a
 * stale `baseVersion` is refused and that a transaction begun by a lookup leaves the entity free
 * once committed. Where either fails (the Firestore emulator fails both) it uses the transactional
 * compare-and-swap, or `beginTransaction`, and logs once why. `conditionalWrites` and
 * `beginWithFirstRead` override the check.
 *
 * Many at once. `readMany` and `replaceMany` serve `locker.scheduleMany()`: one lookup of up to
 * 1,000 keys, then commits of up to 500 mutations that keep each entity's compare-and-swap
 * (`datastore-batch.ts`). `retireLedgerMany` removes up to 500 finished steps' ledger records in
 * one commit, at the versions their steps read them (`ledger-retire.ts`).
 *
 * Ledger. Records are entities of kind `ledgerKind` in the namespace of the entity whose step they
 * carry, so the user's entity and its record commit in one transaction. `listDue` therefore
 * looks in every namespace: by default it asks the `__namespace__` metadata query (the legacy
 * emulator and production support it). The Firestore emulator refuses that query; there the store
 * falls back to the namespaces it has written records to itself, plus the default one. Set
 * `namespaces` to list the namespaces to sweep explicitly, which also saves the metadata query.
 */
import { listDatastoreRecords } from './record-query';
import type { RecordQuery } from '../record-query';
import { Datastore, DatastoreClient, type Key } from '@google-cloud/datastore';
import { ConfigError } from '../../errors/errors';
import { rejectUnknownOptions, type OptionNames } from '../../config/option-names';
import { platformLogger } from '../../log/platform-logger';
import type { ConditionalOutcome, ConditionalWrite, DueLedger, LedgerLookup, LedgerNeeded, LedgerRecord, LedgerRef, Logger, Properties, Snapshot, StepRead, Store, StoreTransaction, VersionedRead } from '../../types';
import { BackendChecks, type Backend, type ProbeTarget } from './backend';
import { readMany, replaceMany } from './batch';
import { retireLedgerMany } from './ledger-retire';
import { findDatastoreKeys } from './key-query';
import type { KeyQuery } from '../key-query';
import { entityProto } from './encode';
import { grpcCode } from './errors';
import { lookup, lookupMany } from './lookup';
import { decodeEntityProperties } from './protos';
import { allNamespaces, queryDue } from './ledger-query';
import { queryDatastoreLocks } from './query';
import { countDatastoreLocks, type CountMethod } from './count';
import type { LockCount, LockCountQuery, LockPage, LockQuery } from '../lock-query';
import { replaceAtVersion } from './replace';
import { DatastoreRpc } from './rpc';
import { entityVersionOf, snapshotOf } from './snapshot';
import { DatastoreTransaction } from './transaction';
import { writeArgs } from './values';
import { KeyGate } from './key-gate';
import { keyString } from '../../keys/keys';
import { dueFirst, ledgerKey, readLedger } from '../ledger-entity';

/** Options of {@link DatastoreStore}. None is needed: the store checks what its backend supports. */
export interface DatastoreStoreOptions {
  /** Kind of the ledger records. Defaults to `LockerOutbox` (the kind's name predates the word "ledger"). */
  ledgerKind?: string;
  /** @deprecated The former name of {@link DatastoreStoreOptions.ledgerKind}; give one or the other. */
  outboxKind?: string;
  /**
   * Begin each transaction with its first lookup instead of a separate `beginTransaction` call.
   * Defaults to what the backend check finds (true on Datastore and the legacy emulator, false on
   * the Firestore emulator, which leaves the entity locked). Set it to skip that part of the check.
   */
  beginWithFirstRead?: boolean;
  /**
   * Make `replaceIfUnchanged` one conditional commit (`Mutation.base_version`) instead of a
   * transaction. Defaults to what the backend check finds (whether a stale `baseVersion` is
   * refused). `true` trusts the backend without checking: fencing then depends on it.
   */
  conditionalWrites?: boolean;
  /**
   * The namespaces `listDue` looks in. Defaults to every namespace, found with the
   * `__namespace__` metadata query.
   */
  namespaces?: readonly string[];
  /**
   * How long one call to Datastore may take, ms, the client's own retries included; then it fails
   * with `StoreUnavailableError`. Defaults to 5000.
   */
  callTimeoutMs?: number;
  /**
   * The generated client to call Datastore with (`new v1.DatastoreClient(...)` from
   * `@google-cloud/datastore`). Defaults to one made from the `Datastore` client's options, closed
   * by `shutdown()`.
   */
  client?: DatastoreClient;
  /** Where the store logs what its backend check found. Defaults to the console. */
  logger?: Logger;
}

/** Every default of {@link DatastoreStoreOptions}. */
export const DATASTORE_STORE_DEFAULTS = Object.freeze({
  /** The kind of ledger records. */
  ledgerKind: 'LockerOutbox',
  /** How long one call to Datastore may take, ms, retries included. */
  callTimeoutMs: 5_000,
});

/** Every option name of {@link DatastoreStoreOptions}. */
const OPTION_NAMES: OptionNames<DatastoreStoreOptions> = {
  ledgerKind: true, outboxKind: true, beginWithFirstRead: true, conditionalWrites: true, namespaces: true, callTimeoutMs: true, client: true, logger: true,
};

/** gRPC codes a refused `__namespace__` query answers with (the Firestore emulator's is the first). */
const UNSUPPORTED: ReadonlySet<number> = new Set([3 /* INVALID_ARGUMENT */, 12 /* UNIMPLEMENTED */]);

/** A {@link Store} on Google Cloud Datastore. */
export class DatastoreStore implements Store {
  private readonly ledgerKind: string;
  /** How this backend counts (an aggregation, or keys where it has none): found on the first count. */
  private readonly countMethod: { current: CountMethod | undefined } = { current: undefined };
  private readonly namespaces?: readonly string[];
  private readonly rpc: DatastoreRpc;
  private readonly client: DatastoreClient;
  private readonly ownsClient: boolean;
  private readonly overrides: Partial<Backend>;
  private readonly probeTarget: ProbeTarget;
  /** What this store found its backend does (checked once, before its first compare-and-swap or transaction). */
  private readonly checks = new BackendChecks();
  private readonly gate = new KeyGate();
  /** Namespaces this store wrote ledger records to: the fallback when namespaces can't be listed. */
  private readonly writtenNamespaces = new Set<string>(['']);
  private namespaceQueryRefused = false;
  private knownProjectId?: string;

  constructor(datastore: Datastore, options: DatastoreStoreOptions = {}) {
    checkClient(datastore);
    rejectUnknownOptions('DatastoreStore', options, OPTION_NAMES);
    if (options.ledgerKind !== undefined && options.outboxKind !== undefined && options.ledgerKind !== options.outboxKind) {
      throw new ConfigError('DatastoreStore: give ledgerKind or its deprecated name outboxKind, not both');
    }
    this.ledgerKind = options.ledgerKind ?? options.outboxKind ?? DATASTORE_STORE_DEFAULTS.ledgerKind;
    if (typeof this.ledgerKind !== 'string' || this.ledgerKind === '' || this.ledgerKind.startsWith('__')) {
      throw new ConfigError('DatastoreStore: ledgerKind must be a non-empty kind name not starting with "__"');
    }
    if (options.namespaces !== undefined) this.namespaces = checkNamespaces(options.namespaces);
    const timeout = checkTimeout(options.callTimeoutMs ?? DATASTORE_STORE_DEFAULTS.callTimeoutMs);
    this.overrides = checkOverrides(options);
    this.ownsClient = options.client === undefined;
    this.client = options.client === undefined ? new DatastoreClient({ ...datastore.options }) : checkGenerated(options.client);
    this.rpc = new DatastoreRpc(this.client, datastore, timeout);
    this.probeTarget = {
      rpc: this.rpc,
      datastore,
      logger: options.logger ?? platformLogger(),
    };
    const projectId = datastore.options?.projectId;
    if (projectId) this.knownProjectId = projectId;
  }

  /** The client's project id, once known (given to the client, or resolved by `init()`). */
  get projectId(): string | undefined {
    return this.knownProjectId;
  }

  /** Resolves the project id when the client was not given one. */
  async init(): Promise<void> {
    this.knownProjectId ??= await this.rpc.project();
  }

  /** Closes the generated client the store made (not one it was given). */
  async shutdown(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }

  async transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    const { beginWithFirstRead } = await this.backend();
    const tx = new DatastoreTransaction(this.rpc, {
      ledgerKind: this.ledgerKind,
      onLedgerNamespace: (namespace) => this.writtenNamespaces.add(namespace),
    });
    try {
      if (!beginWithFirstRead) await tx.begin();
      const result = await fn(tx);
      await tx.commit();
      return result;
    } catch (error) {
      await tx.rollBack();
      throw error;
    }
  }

  async get(key: Key): Promise<Properties | undefined> {
    keyString(key);
    const { entity } = await lookup(this.rpc, key);
    return entity && decodeEntityProperties(entity);
  }

  async read(key: Key): Promise<Snapshot | undefined> {
    keyString(key);
    const { entity, version } = await lookup(this.rpc, key);
    return entity && snapshotOf(entity, version, 'lookup');
  }

  /** The entity and its step's ledger record in one lookup (see `Store.readWithLedger`). */
  async readWithLedger(key: Key, id: string): Promise<StepRead> {
    keyString(key);
    const [entity, ledger] = await lookupMany(this.rpc, [key, ledgerKey(this.ledgerKind, key.namespace, id)]);
    const record = ledger?.entity ? readLedger(id, decodeEntityProperties(ledger.entity)) : undefined;
    return {
      snapshot: entity?.entity ? snapshotOf(entity.entity, entity.version, 'lookup') : undefined,
      record: record && !('malformed' in record) ? record : undefined,
      ...(ledger?.entity && ledger.version !== undefined ? { recordVersion: ledger.version } : {}),
    };
  }

  /** Many ledger records in one lookup (see `Store.readLedgerMany`). */
  async readLedgerMany(refs: readonly LedgerLookup[]): Promise<(LedgerRecord | undefined)[]> {
    if (refs.length > 1_000) throw new RangeError('readLedgerMany reads at most 1,000 records a call');
    if (refs.length === 0) return [];
    const found = await lookupMany(this.rpc, refs.map((r) => ledgerKey(this.ledgerKind, r.key.namespace, r.id)));
    return found.map((f, i) => {
      const record = f.entity ? readLedger(refs[i]!.id, decodeEntityProperties(f.entity)) : undefined;
      return record && !('malformed' in record) ? record : undefined;
    });
  }

  async replaceIfUnchanged(
    key: Key,
    snapshot: Snapshot,
    properties: Properties,
    excludeFromIndexes: readonly string[],
  ): Promise<Snapshot | undefined> {
    keyString(key);
    const base = entityVersionOf(snapshot);
    const entity = entityProto(writeArgs(key, properties, excludeFromIndexes, base.shape));
    const backend = await this.backend();
    const outcome = await replaceAtVersion({ rpc: this.rpc, gate: this.gate, ...backend }, key, entity, base.version);
    return outcome.conflictDetected ? undefined : snapshotOf(entity, outcome.version, 'commit');
  }

  /** Reads up to 1,000 entities in one lookup, absent ones included (see `datastore-batch.ts`). */
  readMany(keys: readonly Key[]): Promise<VersionedRead[]> {
    return readMany(this.rpc, keys);
  }

  /**
   * Writes each entity still at its read's version, with its ledger record: records first, then
   * the entities in NON_TRANSACTIONAL commits with a `baseVersion` each, or, where the backend
   * ignores `baseVersion`, in transactions of 150 (see `datastore-batch.ts`).
   */
  async replaceMany(writes: readonly ConditionalWrite[]): Promise<ConditionalOutcome[]> {
    const { conditionalWrites } = await this.backend();
    return replaceMany({
      rpc: this.rpc, ledgerKind: this.ledgerKind, conditionalWrites, onLedgerNamespace: (namespace) => this.writtenNamespaces.add(namespace),
    }, writes);
  }

  async listDue(now: Date, limit: number): Promise<DueLedger> {
    if (limit <= 0) return { records: [], malformed: [] };
    const namespaces = await this.ledgerNamespaces();
    const lists = await Promise.all(namespaces.map((namespace) => queryDue(this.rpc, this.ledgerKind, namespace, now, limit)));
    return {
      records: lists.flatMap((l) => l.records).sort(dueFirst).slice(0, limit),
      malformed: lists.flatMap((l) => l.malformed),
    };
  }

  /** Lockable entities by step state, ordered by `lock_ts` (see `datastore-query.ts`). */
  queryLocks(query: LockQuery): Promise<LockPage> {
    return queryDatastoreLocks(this.rpc, query);
  }

  /** How many locks match, up to the cap: a count aggregation, or a keys-only count where the backend has none (`count.ts`). */
  countLocks(query: LockCountQuery): Promise<LockCount> {
    return countDatastoreLocks(this.rpc, query, this.countMethod);
  }

  /** Records of one kind, newest first by a time property (`record-query.ts`). */
  listRecords(query: RecordQuery): Promise<LockPage> {
    return listDatastoreRecords(this.rpc, query);
  }

  /** Keys of the entities one property matches, keys-only, one batch (see `datastore-key-query.ts`). */
  async findKeys(query: KeyQuery): Promise<Key[]> {
    if (query.namespace !== undefined) return findDatastoreKeys(this.rpc, query);
    const namespaces = await this.ledgerNamespaces();
    const found = await Promise.all(namespaces.map((namespace) => findDatastoreKeys(this.rpc, { ...query, namespace })));
    return found.flat().slice(0, query.limit);
  }

  /** Removes up to 500 ledger records no longer needed: one commit, after one lookup for those named without a version (see `ledger-retire.ts`). */
  async retireLedgerMany(records: readonly LedgerRef[], needed: LedgerNeeded): Promise<void> {
    const { conditionalWrites } = await this.backend();
    await retireLedgerMany({ rpc: this.rpc, ledgerKind: this.ledgerKind, conditionalWrites }, records, needed);
  }

  /** What the backend supports: the overrides, and the check for what they leave open. */
  private backend(): Promise<Backend> {
    return this.checks.backendOf(this.probeTarget, this.overrides);
  }

  /** The namespaces to sweep: as configured, else all (or, where that query is refused, the known ones). */
  private async ledgerNamespaces(): Promise<readonly string[]> {
    if (this.namespaces) return this.namespaces;
    if (!this.namespaceQueryRefused) {
      try {
        return await allNamespaces(this.rpc);
      } catch (error) {
        if (!UNSUPPORTED.has(grpcCode(error instanceof Error ? error.cause : undefined) ?? -1)) throw error;
        this.namespaceQueryRefused = true;
      }
    }
    return [...this.writtenNamespaces];
  }
}

function checkClient(datastore: unknown): void {
  const client = datastore as Partial<Record<'getProjectId' | 'options' | 'key', unknown>>;
  const missing = (['getProjectId', 'key'] as const).filter((method) => typeof client?.[method] !== 'function');
  if (missing.length > 0 || typeof client?.options !== 'object' || client.options === null) {
    throw new ConfigError('DatastoreStore needs a @google-cloud/datastore Datastore client (new Datastore(...))');
  }
}

function checkGenerated(client: DatastoreClient): DatastoreClient {
  const methods = ['lookup', 'beginTransaction', 'commit', 'rollback', 'runQuery'] as const;
  const missing = methods.filter((method) => typeof (client as unknown as Partial<Record<string, unknown>>)?.[method] !== 'function');
  if (missing.length > 0) {
    throw new ConfigError(`DatastoreStore: client must be a v1.DatastoreClient; the one given lacks ${missing.join(', ')}`);
  }
  return client;
}

function checkTimeout(ms: number): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
    throw new ConfigError(`DatastoreStore: callTimeoutMs must be a positive number of milliseconds; got ${String(ms)}`);
  }
  return ms;
}

function checkOverrides(options: DatastoreStoreOptions): Partial<Backend> {
  const overrides: Partial<Backend> = {};
  for (const name of ['beginWithFirstRead', 'conditionalWrites'] as const) {
    const value = options[name];
    if (value === undefined) continue;
    if (typeof value !== 'boolean') throw new ConfigError(`DatastoreStore: ${name} must be true or false; got ${String(value)}`);
    overrides[name] = value;
  }
  return overrides;
}

function checkNamespaces(namespaces: readonly string[]): readonly string[] {
  if (!Array.isArray(namespaces) || namespaces.length === 0 || namespaces.some((ns) => typeof ns !== 'string')) {
    throw new ConfigError('DatastoreStore: namespaces must be a non-empty array of strings ("" is the default namespace)');
  }
  return Object.freeze([...new Set(namespaces)]);
}
