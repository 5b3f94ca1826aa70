/**
 * The `StoreTransaction` a `DatastoreStore` hands to `fn`: reads go to Datastore at once, writes
 * are buffered (the last write of a key wins) until the store commits them in one `commit`.
 *
 * The transaction begins with its first read (`ReadOptions.newTransaction`), saving the
 * `beginTransaction` round trip, or with `beginTransaction` when the store says so (`begin()`); a
 * transaction that only writes begins at commit.
 */
import type { Key } from '@google-cloud/datastore';
import type { LedgerRecord, Properties, StoreTransaction } from '../../types';
import { rollBack } from './commit';
import { entityProto } from './encode';
import { unavailable } from './errors';
import { BEGIN_TRANSACTION, lookup, lookupMany, type LookupResult } from './lookup';
import { decodeEntity, keyToProto, type Shape } from './protos';
import type { DatastoreRpc, Mutation } from './rpc';
import { writeArgs } from './values';
import { keyString } from '../../keys/keys';
import { LEDGER_UNINDEXED, ledgerKey, ledgerProperties, readLedger } from '../ledger-entity';

/** What a transaction needs from its store. */
export interface TransactionConfig {
  ledgerKind: string;
  /** Told the namespace of every ledger record written. */
  onLedgerNamespace(namespace: string): void;
}

/** One Datastore transaction, as `fn` sees it. */
export class DatastoreTransaction implements StoreTransaction {
  /** What each entity read looked like, by key string, so a put writes it back as it was. */
  private readonly reads = new Map<string, Shape>();
  private readonly mutations = new Map<string, Mutation>();
  /** The transaction's id, once begun. */
  private id?: Uint8Array;
  /**
   * The first read, when it begins the transaction: later reads wait for it, since reads sent
   * before its answer would each begin a transaction of their own.
   */
  private firstRead?: Promise<unknown>;
  private finished = false;

  constructor(
    private readonly rpc: DatastoreRpc,
    private readonly config: TransactionConfig,
  ) {}

  /** Begins the transaction with `beginTransaction` (instead of with its first read). */
  async begin(): Promise<void> {
    this.id = await this.rpc.beginTransaction();
  }

  async get(key: Key): Promise<Properties | undefined> {
    this.checkOpen();
    const id = keyString(key);
    if (this.firstRead) await this.firstRead.catch(() => undefined);
    const read = this.lookup(key, id);
    this.firstRead ??= read;
    return read;
  }

  async getMany(keys: readonly Key[]): Promise<(Properties | undefined)[]> {
    this.checkOpen();
    if (keys.length === 0) return [];
    if (this.firstRead) await this.firstRead.catch(() => undefined);
    // A batched lookup cannot begin the transaction (`lookupMany`): begin it first when no read did.
    if (!this.id) {
      const begun = this.begin();
      this.firstRead ??= begun;
      await begun;
    }
    const found = await lookupMany(this.rpc, keys, { transaction: this.id! });
    return found.map(({ entity }, i) => {
      if (!entity) return undefined;
      const { properties, ...shape } = decodeEntity(entity);
      this.reads.set(keyString(keys[i]!), shape);
      return properties;
    });
  }

  put(key: Key, properties: Properties, excludeFromIndexes: readonly string[]): void {
    this.checkOpen();
    const id = keyString(key);
    this.mutations.set(id, { upsert: entityProto(writeArgs(key, properties, excludeFromIndexes, this.reads.get(id))) });
  }

  delete(key: Key): void {
    this.checkOpen();
    this.mutations.set(keyString(key), { delete: keyToProto(key) });
  }

  async getLedger(key: Key, id: string): Promise<LedgerRecord | undefined> {
    const props = await this.get(ledgerKey(this.config.ledgerKind, key.namespace, id));
    const record = props && readLedger(id, props);
    return record && !('malformed' in record) ? record : undefined;
  }

  putLedger(record: LedgerRecord): void {
    keyString(record.key);
    this.put(ledgerKey(this.config.ledgerKind, record.key.namespace, record.id), ledgerProperties(record), LEDGER_UNINDEXED);
    this.config.onLedgerNamespace(record.key.namespace ?? '');
  }

  deleteLedger(key: Key, id: string): void {
    this.delete(ledgerKey(this.config.ledgerKind, key.namespace, id));
  }

  /** Commits the buffered writes (a transaction that neither read nor wrote sends nothing). */
  async commit(): Promise<void> {
    this.finished = true;
    if (!this.id && this.mutations.size === 0) return;
    this.id ??= await this.rpc.beginTransaction();
    await this.rpc.commit([...this.mutations.values()], this.id);
  }

  /** Rolls the transaction back, if it began; refuses further use. */
  async rollBack(): Promise<void> {
    this.finished = true;
    await rollBack(this.rpc, this.id);
  }

  /** Reads one entity undecoded and keeps its shape. */
  private async lookup(key: Key, id: string): Promise<Properties | undefined> {
    const { entity } = await this.transactionalLookup(key);
    if (!entity) return undefined;
    const { properties, ...shape } = decodeEntity(entity);
    this.reads.set(id, shape);
    return properties;
  }

  private async transactionalLookup(key: Key): Promise<LookupResult> {
    if (this.id) return lookup(this.rpc, key, { transaction: this.id });
    const result = await lookup(this.rpc, key, BEGIN_TRANSACTION);
    if (!result.transaction) throw unavailable('lookup', 'it began no transaction');
    this.id = result.transaction;
    return result;
  }

  private checkOpen(): void {
    if (this.finished) throw new Error('this transaction has already committed or rolled back');
  }
}
