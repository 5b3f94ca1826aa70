/**
 * One `FirestoreStore` transaction: a Firestore transaction (`runTransaction`, one attempt: the
 * Locker retries the whole read-check-write on `ContentionError`). Firestore wants every read of a
 * transaction before its first write, and the port promises that a transaction does not see its
 * own writes, so writes are buffered here (checked and encoded at once) and handed to the
 * Firestore transaction when `fn` has resolved, just before the commit. {@link runTransaction}
 * runs one, each of its calls within the store's deadline (`deadline.ts`).
 */
import type { Key } from '@google-cloud/datastore';
import type { DocumentData, DocumentReference, Firestore, Transaction } from '@google-cloud/firestore';
import type { LedgerRecord, Properties, StoreTransaction } from '../../types';
import { LEDGER_UNINDEXED, ledgerKey, ledgerProperties, readLedger } from '../ledger-entity';
import { deadlineError } from './deadline';
import { call, toStoreError } from './errors';
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

/**
 * One attempt of a Firestore transaction, bounded call by call (as `DatastoreStore` bounds its
 * begin, lookups and commit), not as a whole: the time `fn` spends on its own work is the
 * caller's. Each read inside it is a call with the deadline ({@link FirestoreTransaction}); before `fn` starts
 * and from the moment it resolves to the end of the commit, the store waits at most
 * `callTimeoutMs` each. So the transaction ends within `fn`'s own time, its reads' deadlines and
 * two more. Given up, it leaves no write the caller does not know of:
 * - given up before `fn` started (the client never called back in time): `fn` never runs, and the
 *   attempt, should it start later, throws before anything is written;
 * - `fn` threw (a read that hit its deadline included): its error is rethrown at once, without
 *   waiting for the client's rollback (which waits for the first read, maybe hung); the writes
 *   were buffered (above) and are never handed to Firestore, so no commit is sent;
 * - the commit did not answer in time: a `StoreUnavailableError` saying that its outcome is
 *   unknown (it may still apply), exactly as a commit given up by `DatastoreStore`.
 */
export function runTransaction<T>(firestore: Firestore, ledgerKind: string, timeoutMs: number, fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    let ended = false;
    const end = (settle: () => void): void => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      settle();
    };
    const arm = (operation: string, outcome: string): void => {
      timer = setTimeout(() => end(() => reject(deadlineError(operation, timeoutMs, outcome))), timeoutMs);
    };
    arm('transaction', 'it was given up before it began; nothing was written');
    firestore.runTransaction(async (t) => {
      clearTimeout(timer);
      if (ended) throw new Error('FirestoreStore: this transaction was given up at its deadline');
      const tx = new FirestoreTransaction(firestore, t, ledgerKind, timeoutMs);
      let result: T;
      try {
        result = await fn(tx);
      } catch (error) {
        end(() => reject(error)); // the caller's own error, or a store error already classified
        throw error;
      } finally {
        tx.finish();
      }
      tx.apply();
      arm('transaction commit', 'its outcome is unknown (the commit may still apply)');
      return result;
    }, { maxAttempts: 1 }).then(
      (result) => end(() => resolve(result)),
      (error: unknown) => end(() => reject(toStoreError('transaction', error))),
    );
  });
}
