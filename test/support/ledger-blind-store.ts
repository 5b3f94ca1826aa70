/**
 * A store wrapper without `readWithLedger`, as a store of the user's own may be: it delegates every
 * other operation to a real store. `handle()` then reads the entity alone and cannot check a task's
 * route and body against its step's ledger record, so a queue's own credential is the only check
 * left (the `LocalQueue` signature binds the route and the body).
 */
import type { Key } from '@google-cloud/datastore';
import type {
  ConditionalOutcome, ConditionalWrite, DueLedger, KeyQuery, LedgerNeeded, LedgerRef, LockPage, LockQuery, Properties, Snapshot, Store,
  StoreTransaction, VersionedRead,
} from '../../src/types';

export class LedgerBlindStore implements Store {
  constructor(private readonly inner: Store) {}

  get projectId(): string | undefined {
    return this.inner.projectId;
  }

  transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> { return this.inner.transaction(fn); }
  get(key: Key): Promise<Properties | undefined> { return this.inner.get(key); }
  read(key: Key): Promise<Snapshot | undefined> { return this.inner.read(key); }
  replaceIfUnchanged(key: Key, s: Snapshot, p: Properties, e: readonly string[]): Promise<Snapshot | undefined> { return this.inner.replaceIfUnchanged(key, s, p, e); }
  listDue(now: Date, limit: number): Promise<DueLedger> { return this.inner.listDue(now, limit); }
  retireLedgerMany(records: readonly LedgerRef[], needed: LedgerNeeded): Promise<void> { return this.inner.retireLedgerMany!(records, needed); }
  queryLocks(q: LockQuery): Promise<LockPage> { return this.inner.queryLocks!(q); }
  findKeys(q: KeyQuery): Promise<Key[]> { return this.inner.findKeys!(q); }
  readMany(keys: readonly Key[]): Promise<VersionedRead[]> { return this.inner.readMany!(keys); }
  replaceMany(writes: readonly ConditionalWrite[]): Promise<ConditionalOutcome[]> { return this.inner.replaceMany!(writes); }
  init(): Promise<void> { return this.inner.init?.() ?? Promise.resolve(); }
  shutdown(): Promise<void> { return this.inner.shutdown?.() ?? Promise.resolve(); }
}
