/**
 * The `StoreTransaction` a `DatastoreStore` hands to `fn`: reads go to Datastore at once, writes
 * are buffered by the client's `Transaction` until the store commits.
 */
import type { Key, Transaction } from '@google-cloud/datastore';
import type { CallOptions } from 'google-gax';
import type { OutboxRecord, Properties, StoreTransaction } from '../types';
import { StoreUnavailableError } from '../errors';
import { call } from './datastore-errors';
import { lookup, type LookupResult } from './datastore-lookup';
import { outboxEntity } from './datastore-outbox';
import { decodeEntity, type Shape } from './datastore-protos';
import { writeArgs } from './datastore-values';
import { copyKey, keyString } from './keys';

/** The client `Transaction`'s hook for a transaction begun by a read (protected in its types). */
interface TransactionInternals {
  parseTransactionResponse(response: { transaction: Uint8Array }): void;
}

/** What a transaction needs from its store. */
export interface TransactionConfig {
  outboxKind: string;
  gaxOptions: CallOptions;
  /** Told the namespace of every outbox record written. */
  onOutboxNamespace(namespace: string): void;
}

/** One Datastore transaction, as `fn` sees it. */
export class DatastoreTransaction implements StoreTransaction {
  /** What each entity read looked like, by key string, so a put writes it back as it was. */
  private readonly reads = new Map<string, Shape>();
  /**
   * The first read. When the transaction begins with its first read, later reads wait for it:
   * reads sent before its answer would each begin a transaction of their own.
   */
  private firstRead?: Promise<unknown>;
  private finished = false;

  constructor(
    private readonly tx: Transaction,
    private readonly config: TransactionConfig,
  ) {}

  async get(key: Key): Promise<Properties | undefined> {
    this.checkOpen();
    const id = keyString(key);
    if (this.firstRead) await this.firstRead.catch(() => undefined);
    const read = this.lookup(key, id);
    this.firstRead ??= read;
    return read;
  }

  put(key: Key, properties: Properties, excludeFromIndexes: readonly string[]): void {
    this.checkOpen();
    this.tx.save(writeArgs(key, properties, excludeFromIndexes, this.reads.get(keyString(key))));
  }

  delete(key: Key): void {
    this.checkOpen();
    keyString(key);
    this.tx.delete(copyKey(key));
  }

  putOutbox(record: OutboxRecord): void {
    this.checkOpen();
    keyString(record.key);
    this.tx.save(outboxEntity(this.config.outboxKind, record));
    this.config.onOutboxNamespace(record.key.namespace ?? '');
  }

  /** Refuses further use: the store committed or rolled back. */
  finish(): void {
    this.finished = true;
  }

  /** Reads one entity undecoded (see {@link transactionalLookup}) and keeps its shape. */
  private async lookup(key: Key, id: string): Promise<Properties | undefined> {
    const { entity } = await transactionalLookup(this.tx, key, this.config.gaxOptions);
    if (!entity) return undefined;
    const { properties, ...shape } = decodeEntity(entity);
    this.reads.set(id, shape);
    return properties;
  }

  private checkOpen(): void {
    if (this.finished) throw new Error('this transaction has already committed or rolled back');
  }
}

/**
 * Looks up one key in `tx`. The first read of a transaction not yet begun begins it
 * (`ReadOptions.newTransaction`) and hands its id to the client's `Transaction`, as the client's
 * own `get()` does, so the commit and rollback use it.
 */
export async function transactionalLookup(tx: Transaction, key: Key, gaxOptions: CallOptions): Promise<LookupResult> {
  const begin = !tx.id;
  const result = await call('lookup', () => lookup(tx, key, begin, gaxOptions));
  if (begin) {
    if (!result.transaction) throw new StoreUnavailableError('Datastore lookup began no transaction');
    (tx as unknown as TransactionInternals).parseTransactionResponse({ transaction: result.transaction });
  }
  return result;
}
