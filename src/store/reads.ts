/**
 * The store's read port (docs/design.md, section 15): the reads of records that are not a lock's
 * (ledger records due, fan-out headers, pages and child records, the status page's listing), for
 * the parts above the store. Locks are read through the lock part (`locks.ts`), which owns their
 * writes; nothing above the store holds the `Store` itself.
 */
import type { Key } from '@google-cloud/datastore';
import type { DueLedger, KeyQuery, LedgerLookup, LedgerRecord, LockCount, LockCountQuery, LockPage, LockQuery, Properties, RecordQuery, Store } from '../types';

/** Keys per lookup (Datastore takes 1,000). */
const LOOKUP = 1000;

/** The read port (see the file's comment); built once per Locker. */
export class StoreReads {
  constructor(private readonly store: Store) {}

  /** The properties of `key`, strongly consistent; undefined when it does not exist. */
  get(key: Key): Promise<Properties | undefined> {
    return this.store.get(key);
  }

  /** Reads many keys, in order (a lookup per 1,000 keys where the store has `readMany`). */
  async getMany(keys: readonly Key[]): Promise<(Properties | undefined)[]> {
    const { store } = this;
    const out: (Properties | undefined)[] = [];
    for (let start = 0; start < keys.length; start += LOOKUP) {
      const slice = keys.slice(start, start + LOOKUP);
      if (store.readMany) out.push(...(await store.readMany(slice)).map((r) => r.properties));
      else out.push(...await Promise.all(slice.map((k) => store.get(k))));
    }
    return out;
  }

  /**
   * The ledger records named, in order (undefined where there is none): a lookup per 1,000 where
   * the store has `readLedgerMany`, else each read with its entity (`readWithLedger`). Undefined
   * for all when the store has neither.
   */
  async ledgers(refs: readonly LedgerLookup[]): Promise<(LedgerRecord | undefined)[]> {
    const { store } = this;
    if (store.readLedgerMany) {
      const out: (LedgerRecord | undefined)[] = [];
      for (let start = 0; start < refs.length; start += LOOKUP) out.push(...await store.readLedgerMany(refs.slice(start, start + LOOKUP)));
      return out;
    }
    if (store.readWithLedger) return Promise.all(refs.map(async (r) => (await store.readWithLedger!(r.key, r.id)).record));
    return refs.map(() => undefined);
  }

  /** Up to `limit` ledger records due by `now`, oldest due first. */
  listDue(now: Date, limit: number): Promise<DueLedger> {
    return this.store.listDue(now, limit);
  }

  /** Whether the store finds keys by one property (`findKeys`). */
  get findsKeys(): boolean {
    return this.store.findKeys !== undefined;
  }

  /** Keys of the entities one property matches (only where `findsKeys`). */
  findKeys(query: KeyQuery): Promise<Key[]> {
    return this.store.findKeys!(query);
  }

  /** Whether the store pages through locks by state (`queryLocks`). */
  get queriesLocks(): boolean {
    return typeof this.store.queryLocks === 'function';
  }

  /** Whether the store counts locks (`countLocks`). */
  get countsLocks(): boolean {
    return typeof this.store.countLocks === 'function';
  }

  /** A count of locks (only where `countsLocks`). */
  countLocks(query: LockCountQuery): Promise<LockCount> {
    return this.store.countLocks!(query);
  }

  /** Whether the store lists records newest first (`listRecords`). */
  get listsRecords(): boolean {
    return typeof this.store.listRecords === 'function';
  }

  /** One page of records, newest first (only where `listsRecords`). */
  listRecords(query: RecordQuery): Promise<LockPage> {
    return this.store.listRecords!(query);
  }

  /** One page of locks (only where `queriesLocks`). */
  queryLocks(query: LockQuery): Promise<LockPage> {
    return this.store.queryLocks!(query);
  }
}
