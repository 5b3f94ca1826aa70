/**
 * A store wrapper with the `Store` interface that counts what goes through it: reads, and every
 * write (a put, delete or ledger record inside a transaction, a compare-and-swap, a ledger
 * deletion). The fuzz asserts it saw no write.
 */
import type { DueLedger, Key, LedgerNeeded, LedgerRef, Properties, Snapshot, StepRead, Store, StoreTransaction } from '../src/index';

/** What went through the store. */
export interface StoreCounts {
  reads: number;
  transactions: number;
  writes: number;
}

export class CountingStore implements Store {
  readonly counts: StoreCounts = { reads: 0, transactions: 0, writes: 0 };

  constructor(private readonly inner: Store) {}

  get projectId(): string | undefined {
    return this.inner.projectId;
  }

  transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    this.counts.transactions++;
    return this.inner.transaction((tx) => fn({
      get: (key) => {
        this.counts.reads++;
        return tx.get(key);
      },
      put: (key, properties, excluded) => {
        this.counts.writes++;
        tx.put(key, properties, excluded);
      },
      delete: (key) => {
        this.counts.writes++;
        tx.delete(key);
      },
      getLedger: (key, id) => {
        this.counts.reads++;
        return tx.getLedger(key, id);
      },
      putLedger: (record) => {
        this.counts.writes++;
        tx.putLedger(record);
      },
      deleteLedger: (key, id) => {
        this.counts.writes++;
        tx.deleteLedger(key, id);
      },
    }));
  }

  get(key: Key): Promise<Properties | undefined> {
    this.counts.reads++;
    return this.inner.get(key);
  }

  /** The inner store's `readWithLedger`, counted as one read (one lookup on Datastore). */
  get readWithLedger(): ((key: Key, id: string) => Promise<StepRead>) | undefined {
    const inner = this.inner.readWithLedger?.bind(this.inner);
    if (!inner) return undefined;
    return (key, id) => {
      this.counts.reads++;
      return inner(key, id);
    };
  }

  /** The inner store's `retireLedgerMany`, counted as one write (one commit on Datastore). */
  get retireLedgerMany(): ((records: readonly LedgerRef[], needed: LedgerNeeded) => Promise<void>) | undefined {
    const inner = this.inner.retireLedgerMany?.bind(this.inner);
    if (!inner) return undefined;
    return (records, needed) => {
      this.counts.writes++;
      return inner(records, needed);
    };
  }

  read(key: Key): Promise<Snapshot | undefined> {
    this.counts.reads++;
    return this.inner.read(key);
  }

  replaceIfUnchanged(key: Key, snapshot: Snapshot, properties: Properties, excluded: readonly string[]): Promise<Snapshot | undefined> {
    this.counts.writes++;
    return this.inner.replaceIfUnchanged(key, snapshot, properties, excluded);
  }

  listDue(now: Date, limit: number): Promise<DueLedger> {
    this.counts.reads++;
    return this.inner.listDue(now, limit);
  }

}
