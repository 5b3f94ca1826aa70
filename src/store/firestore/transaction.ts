/**
 * One `FirestoreStore` transaction: a Firestore transaction (`runTransaction`, one attempt: the
 * Locker retries the whole read-check-write on `ContentionError`). Firestore wants every read of a
 * transaction before its first write, and the port promises that a transaction does not see its
 * own writes, so writes are buffered here (checked and encoded at once) and handed to the
 * Firestore transaction when `fn` has resolved, just before the commit.
 */
import type { Key } from '@google-cloud/datastore';
import type { DocumentData, DocumentReference, Firestore, Transaction } from '@google-cloud/firestore';
import type { LedgerRecord, Properties, StoreTransaction } from '../../types';
import { LEDGER_UNINDEXED, ledgerKey, ledgerProperties, readLedger } from '../ledger-entity';
import { call } from './errors';
import { documentOf } from './paths';
import { fromDocument, toDocument } from './values';

/** A transaction of a {@link FirestoreStore}, over one Firestore transaction. */
export class FirestoreTransaction implements StoreTransaction {
  /** Buffered writes by document path: data to set, or undefined to delete. */
  private readonly writes = new Map<string, { ref: DocumentReference; data: DocumentData | undefined }>();
  private finished = false;

  constructor(
    private readonly firestore: Firestore,
    private readonly tx: Transaction,
    private readonly ledgerKind: string,
    /** The deadline of each read, ms (`deadline.ts`). */
    private readonly timeoutMs: number,
  ) {}

  async get(key: Key): Promise<Properties | undefined> {
    this.checkOpen();
    const ref = documentOf(this.firestore, key);
    const snapshot = await call('transactional read', this.timeoutMs, () => this.tx.get(ref));
    const data = snapshot.data();
    return data && fromDocument(data);
  }

  async getMany(keys: readonly Key[]): Promise<(Properties | undefined)[]> {
    this.checkOpen();
    if (keys.length === 0) return [];
    const refs = keys.map((key) => documentOf(this.firestore, key));
    const snapshots = await call('transactional read', this.timeoutMs, () => this.tx.getAll(...refs));
    return snapshots.map((snapshot) => {
      const data = snapshot.data();
      return data && fromDocument(data);
    });
  }

  put(key: Key, properties: Properties, _excludeFromIndexes: readonly string[]): void {
    this.checkOpen();
    const ref = documentOf(this.firestore, key);
    this.writes.set(ref.path, { ref, data: toDocument(this.firestore, properties) });
  }

  delete(key: Key): void {
    this.checkOpen();
    const ref = documentOf(this.firestore, key);
    this.writes.set(ref.path, { ref, data: undefined });
  }

  async getLedger(key: Key, id: string): Promise<LedgerRecord | undefined> {
    const props = await this.get(ledgerKey(this.ledgerKind, key.namespace, id));
    const record = props && readLedger(id, props);
    return record && !('malformed' in record) ? record : undefined;
  }

  putLedger(record: LedgerRecord): void {
    documentOf(this.firestore, record.key); // the entity's key must be complete and mappable
    this.put(ledgerKey(this.ledgerKind, record.key.namespace, record.id), ledgerProperties(record), LEDGER_UNINDEXED);
  }

  deleteLedger(key: Key, id: string): void {
    this.delete(ledgerKey(this.ledgerKind, key.namespace, id));
  }

  /** Hands the buffered writes to the Firestore transaction (its commit follows). */
  apply(): void {
    for (const { ref, data } of this.writes.values()) {
      if (data === undefined) this.tx.delete(ref);
      else this.tx.set(ref, data);
    }
  }

  /** Ends the transaction: later use throws. */
  finish(): void {
    this.finished = true;
  }

  private checkOpen(): void {
    if (this.finished) throw new Error('this transaction has already committed or rolled back');
  }
}
