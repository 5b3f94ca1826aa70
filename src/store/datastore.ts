/**
 * The production store: Google Cloud Datastore (Firestore in Datastore mode, or the legacy
 * emulator) through an injected `@google-cloud/datastore` client.
 *
 * Transactions. By default a transaction begins with its first lookup (`ReadOptions.newTransaction`,
 * what the v10 client does when `get()` comes before `run()`), saving the `beginTransaction` round
 * trip. `beginWithFirstRead: false` calls `run()` first instead; use it against the Firestore
 * emulator, which leaves keys read that way locked for a minute. A failed transaction is always
 * rolled back (rollback errors are ignored). Errors: ABORTED and lock timeouts become
 * `ContentionError`; any other failure becomes `StoreUnavailableError`; what `fn` throws passes
 * through unchanged.
 *
 * Fidelity. Lookups are decoded by the store itself (`datastore-protos.ts`), so an entity read
 * and put back in one transaction keeps every property's type and index setting: integral doubles
 * stay doubles, integers beyond 2^53 keep every digit (handed out as `Datastore.int`), geo points
 * stay geo points, unindexed values stay unindexed; a put also excludes the names it is given, and
 * strings and blobs too long to be indexed.
 *
 * Compare-and-swap. `read` is one lookup; its snapshot's opaque `version` holds the entity's
 * version (`EntityResult.version`) and the shape a faithful write-back needs (integral doubles,
 * unindexed values). `replaceIfUnchanged` writes the entity back the way a transaction's put does,
 * by default with ONE non-transactional `commit` whose upsert carries `baseVersion`
 * (`Mutation.base_version`): the server applies it only if the entity is still at that version and
 * otherwise reports `conflictDetected`, which resolves to undefined. The new snapshot is what was
 * written, at the version the commit reports. With `conditionalWrites: false` it is a transaction
 * instead: a lookup (beginning the transaction, or after `beginTransaction` when
 * `beginWithFirstRead` is off), a comparison of the version found, and a commit: two round trips
 * (three without `beginWithFirstRead`); it is run again when it aborts on contention, so a loser
 * reports a conflict as with `baseVersion` (contention past every retry: `StoreUnavailableError`).
 * Datastore may keep an entity's version across a write that changes nothing (documented for
 * `MutationResult.version`; the legacy emulator does, the Firestore emulator does not), so a
 * snapshot taken before such a write may stay fresh.
 *
 * What the emulators do with `baseVersion` (cloud-datastore-emulator 2.3.1 and
 * cloud-firestore-emulator 1.19.9, Cloud SDK 528): the legacy Datastore emulator honours it: a
 * stale version, or an entity deleted since, gives `conflictDetected` and nothing is written;
 * versions are real (a counter, also in lookups). The Firestore emulator in Datastore mode ignores
 * it (and `updateTime` too): it applies every such write and never reports a conflict, though its
 * versions are real (update times in microseconds). Against it, set `conditionalWrites: false`.
 * Production Firestore in Datastore mode documents `base_version`; this library was not tried there.
 *
 * Outbox. Records are entities of kind `outboxKind` in the namespace of the entity whose step they
 * carry, so the user's entity and its record commit in one transaction. `listOutbox` must
 * therefore look in every namespace: by default it asks the `__namespace__` metadata query (the
 * legacy emulator and production support it). The Firestore emulator refuses that query; there
 * the store falls back to the namespaces it has written records to itself, plus the default one.
 * Set `namespaces` to list the namespaces to sweep explicitly, which also saves the metadata query.
 */
import { Datastore, PropertyFilter, type Key } from '@google-cloud/datastore';
import type { CallOptions } from 'google-gax';
import { ConfigError } from '../errors';
import { rejectUnknownOptions, type OptionNames } from '../option-names';
import type { OutboxRecord, Properties, Snapshot, Store, StoreTransaction } from '../types';
import { entityProto, rollBack } from './datastore-commit';
import { call, grpcCode, toStoreError } from './datastore-errors';
import { outboxKey, outboxRecord } from './datastore-outbox';
import { lookup } from './datastore-lookup';
import { decodeEntity } from './datastore-protos';
import { replaceAtVersion, type ReplaceConfig } from './datastore-replace';
import { entityVersionOf, snapshotOf } from './datastore-snapshot';
import { DatastoreTransaction } from './datastore-transaction';
import { queryDatastoreLocks } from './datastore-query';
import type { LockPage, LockQuery } from './lock-query';
import { writeArgs } from './datastore-values';
import { keyString } from './keys';

/** Options of {@link DatastoreStore}. */
export interface DatastoreStoreOptions {
  /** Kind of the outbox records. Defaults to `LockerOutbox`. */
  outboxKind?: string;
  /**
   * Begin each transaction with its first lookup instead of a separate `beginTransaction` call.
   * Defaults to true; set it to false against the Firestore emulator.
   */
  beginWithFirstRead?: boolean;
  /**
   * Make `replaceIfUnchanged` one conditional commit (`Mutation.base_version`) instead of a
   * transaction. Defaults to true; set it to false against the Firestore emulator, which ignores
   * `baseVersion`.
   */
  conditionalWrites?: boolean;
  /**
   * The namespaces `listOutbox` looks in. Defaults to every namespace, found with the
   * `__namespace__` metadata query.
   */
  namespaces?: readonly string[];
  /**
   * Call options for every request (e.g. `{ timeout: 10_000 }` to bound how long an unreachable
   * Datastore is retried). Defaults to the client's own settings.
   */
  gaxOptions?: CallOptions;
}

/** Every default of {@link DatastoreStoreOptions}. */
export const DATASTORE_STORE_DEFAULTS = Object.freeze({
  /** The kind of outbox records. */
  outboxKind: 'LockerOutbox',
  /** A transaction begins with its first read (one round trip fewer). */
  beginWithFirstRead: true,
  /** A compare-and-swap is one commit carrying the version read (`baseVersion`). */
  conditionalWrites: true,
});

/** Every option name of {@link DatastoreStoreOptions}. */
const OPTION_NAMES: OptionNames<DatastoreStoreOptions> = {
  outboxKind: true, beginWithFirstRead: true, conditionalWrites: true, namespaces: true, gaxOptions: true,
};

/** gRPC codes a refused `__namespace__` query answers with (the Firestore emulator's is the first). */
const UNSUPPORTED = new Set([3 /* INVALID_ARGUMENT */, 12 /* UNIMPLEMENTED */]);

/** A {@link Store} on Google Cloud Datastore. */
export class DatastoreStore implements Store {
  private readonly outboxKind: string;
  private readonly beginWithFirstRead: boolean;
  private readonly namespaces?: readonly string[];
  private readonly gaxOptions: CallOptions;
  private readonly replaceConfig: ReplaceConfig;
  /** Namespaces this store wrote outbox records to: the fallback when namespaces can't be listed. */
  private readonly writtenNamespaces = new Set<string>(['']);
  private namespaceQueryRefused = false;
  private knownProjectId?: string;

  constructor(
    private readonly datastore: Datastore,
    options: DatastoreStoreOptions = {},
  ) {
    checkClient(datastore);
    rejectUnknownOptions('DatastoreStore', options, OPTION_NAMES);
    this.outboxKind = options.outboxKind ?? DATASTORE_STORE_DEFAULTS.outboxKind;
    this.beginWithFirstRead = options.beginWithFirstRead ?? DATASTORE_STORE_DEFAULTS.beginWithFirstRead;
    this.gaxOptions = { ...options.gaxOptions };
    this.replaceConfig = {
      datastore,
      gaxOptions: this.gaxOptions,
      conditionalWrites: options.conditionalWrites ?? DATASTORE_STORE_DEFAULTS.conditionalWrites,
      beginWithFirstRead: this.beginWithFirstRead,
    };
    if (typeof this.outboxKind !== 'string' || this.outboxKind === '' || this.outboxKind.startsWith('__')) {
      throw new ConfigError('DatastoreStore: outboxKind must be a non-empty kind name not starting with "__"');
    }
    if (options.namespaces !== undefined) this.namespaces = checkNamespaces(options.namespaces);
    const projectId = datastore.options?.projectId;
    if (projectId) this.knownProjectId = projectId;
  }

  /** The client's project id, once known (given to the client, or resolved by `init()`). */
  get projectId(): string | undefined {
    return this.knownProjectId;
  }

  /** Resolves the project id when the client was not given one. */
  async init(): Promise<void> {
    this.knownProjectId ??= await call('project id lookup', () => this.datastore.getProjectId());
  }

  async transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    const tx = this.datastore.transaction();
    const adapter = new DatastoreTransaction(tx, {
      outboxKind: this.outboxKind,
      gaxOptions: this.gaxOptions,
      onOutboxNamespace: (namespace) => this.writtenNamespaces.add(namespace),
    });
    try {
      if (!this.beginWithFirstRead) await call('begin transaction', () => tx.run({ gaxOptions: this.gaxOptions }));
      const result = await fn(adapter);
      adapter.finish();
      await call('commit', () => tx.commit(this.gaxOptions));
      return result;
    } catch (error) {
      adapter.finish();
      await rollBack(tx, this.gaxOptions);
      throw error;
    }
  }

  async get(key: Key): Promise<Properties | undefined> {
    keyString(key);
    const { entity } = await call('lookup', () => lookup(this.datastore, key, false, this.gaxOptions));
    return entity && decodeEntity(entity).properties;
  }

  async read(key: Key): Promise<Snapshot | undefined> {
    keyString(key);
    const { entity, version } = await call('lookup', () => lookup(this.datastore, key, false, this.gaxOptions));
    return entity && snapshotOf(entity, version, 'lookup');
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
    const outcome = await replaceAtVersion(this.replaceConfig, key, entity, base.version);
    return outcome.conflictDetected ? undefined : snapshotOf(entity, outcome.version, 'commit');
  }

  async listOutbox(before: Date, limit: number): Promise<OutboxRecord[]> {
    if (limit <= 0) return [];
    const namespaces = await this.outboxNamespaces();
    const lists = await Promise.all(namespaces.map((namespace) => this.queryOutbox(namespace, before, limit)));
    return lists.flat().sort(oldestFirst).slice(0, limit);
  }

  /** Lockable entities by step state, ordered by `lock_ts` (see `datastore-query.ts`). */
  queryLocks(query: LockQuery): Promise<LockPage> {
    return queryDatastoreLocks(this.datastore, this.gaxOptions, query);
  }

  async deleteOutbox(record: OutboxRecord): Promise<void> {
    await call('outbox delete', () => this.datastore.delete(outboxKey(this.outboxKind, record), this.gaxOptions));
  }

  private async queryOutbox(namespace: string, before: Date, limit: number): Promise<OutboxRecord[]> {
    const query = this.datastore
      .createQuery(namespace, this.outboxKind)
      .filter(new PropertyFilter('createdAt', '<', before))
      .order('createdAt')
      .limit(limit);
    const [entities] = await call('outbox query', () => this.datastore.runQuery(query, { gaxOptions: this.gaxOptions }));
    return entities.map(outboxRecord);
  }

  /** The namespaces to sweep: as configured, else all (or, where that query is refused, the known ones). */
  private async outboxNamespaces(): Promise<readonly string[]> {
    if (this.namespaces) return this.namespaces;
    if (!this.namespaceQueryRefused) {
      try {
        return await this.allNamespaces();
      } catch (error) {
        if (!UNSUPPORTED.has(grpcCode(error) ?? -1)) throw toStoreError('namespace query', error);
        this.namespaceQueryRefused = true;
      }
    }
    return [...this.writtenNamespaces];
  }

  private async allNamespaces(): Promise<string[]> {
    const query = this.datastore.createQuery('__namespace__').select('__key__');
    const [entities] = await this.datastore.runQuery(query, { gaxOptions: this.gaxOptions });
    const names = entities.map((entity: Record<string | symbol, unknown>) => {
      const key = entity[Datastore.KEY];
      return typeof key === 'object' && key !== null && Datastore.isKey(key) ? (key.name ?? '') : '';
    });
    return [...new Set(['', ...names])];
  }
}

function checkClient(datastore: unknown): void {
  const client = datastore as Partial<Record<'transaction' | 'get' | 'createQuery' | 'runQuery' | 'delete', unknown>>;
  const missing = (['transaction', 'get', 'createQuery', 'runQuery', 'delete'] as const).filter(
    (method) => typeof client?.[method] !== 'function',
  );
  if (missing.length > 0) {
    throw new ConfigError(
      `DatastoreStore needs a @google-cloud/datastore Datastore client; the one given lacks ${missing.join(', ')}`,
    );
  }
}

function checkNamespaces(namespaces: readonly string[]): readonly string[] {
  if (!Array.isArray(namespaces) || namespaces.length === 0 || namespaces.some((ns) => typeof ns !== 'string')) {
    throw new ConfigError('DatastoreStore: namespaces must be a non-empty array of strings ("" is the default namespace)');
  }
  return Object.freeze([...new Set(namespaces)]);
}

function oldestFirst(a: OutboxRecord, b: OutboxRecord): number {
  return a.createdAt.getTime() - b.createdAt.getTime() || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}
