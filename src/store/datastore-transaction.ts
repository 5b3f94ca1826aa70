/**
 * The `StoreTransaction` a `DatastoreStore` hands to `fn`: reads go to Datastore at once, writes
 * are buffered by the client's `Transaction` until the store commits.
 */
import type { Key, Transaction } from '@google-cloud/datastore';
import type { CallOptions } from 'google-gax';
import type { OutboxRecord, Properties, StoreTransaction } from '../types';
import { StoreUnavailableError } from '../errors';
import { call } from './datastore-errors';
import { lookup } from './datastore-lookup';
import { outboxEntity } from './datastore-outbox';
import { decodeEntity, type Decoded } from './datastore-protos';
import { indexExclusions, restoreDoubles } from './datastore-values';
import { copyKey, keyString } from './keys';
import { copyProperties } from './values';

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
  private readonly reads = new Map<string, Omit<Decoded, 'properties'>>();
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
    const read = this.reads.get(keyString(key));
    const data = restoreDoubles(copyProperties(properties), read?.integralDoubles);
    this.tx.save({
      key: copyKey(key),
      data,
      excludeFromIndexes: indexExclusions(data, excludeFromIndexes, read?.unindexed),
      excludeLargeProperties: true,
    });
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

  /**
   * Reads one entity undecoded. The first read of a transaction not yet begun begins it
   * (`ReadOptions.newTransaction`) and hands its id to the client's `Transaction`, as the client's
   * own `get()` does, so the commit and rollback use it.
   */
  private async lookup(key: Key, id: string): Promise<Properties | undefined> {
    const begin = !this.tx.id;
    const { entity, transaction } = await call('lookup', () => lookup(this.tx, key, begin, this.config.gaxOptions));
    if (begin) {
      if (!transaction) throw new StoreUnavailableError('Datastore lookup began no transaction');
      (this.tx as unknown as TransactionInternals).parseTransactionResponse({ transaction });
    }
    if (!entity) return undefined;
    const { properties, ...shape } = decodeEntity(entity);
    this.reads.set(id, shape);
    return properties;
  }

  private checkOpen(): void {
    if (this.finished) throw new Error('this transaction has already committed or rolled back');
  }
}
