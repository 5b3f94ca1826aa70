/**
 * The one part that writes locks (docs/design.md, section 15). Every caller reads, applies a named
 * transition of `rules/transitions.ts`, and hands the `Lock` it made here; this part turns it into
 * properties (`writeLock`), keeps the lock fields and `excludeFromIndexes` out of indexes, retries
 * a transaction whole when it aborts on contention, and keeps the duplicate cache true after every
 * kind of write (a compare-and-swap records what it wrote, a transaction forgets the key), so no
 * caller has to remember it.
 */
import type { Key } from '@google-cloud/datastore';
import type { Config } from '../config/options';
import { UNINDEXED_LOCK_FIELDS, writeLock, type Lock } from '../rules/lock-fields';
import type { SeenSteps } from '../step/seen-steps';
import type { ConditionalOutcome, ConditionalWrite, LedgerRecord, Properties, Snapshot, StoreTransaction, VersionedRead } from '../types';
import { withContentionRetry } from './retry';

/** What the lock writer reads of the configuration. */
export type LockWriterSettings = Pick<Config, 'store' | 'contention' | 'clock' | 'leaseDuration' | 'excludeFromIndexes'>;

/** One entity of a batch kickoff: the version read, the lock to write, the user's own properties and the step's record. */
export interface BatchLockWrite {
  read: VersionedRead;
  lock: Lock;
  own: Properties;
  record: LedgerRecord;
  /** The kickoff's record of the chain it starts (see `ConditionalWrite.marker`). */
  marker?: ConditionalWrite['marker'];
}

/** The one lock-writing part (see the file's comment); built once per Locker. */
export class LockWriter {
  private readonly excludes: readonly string[];

  constructor(private readonly settings: LockWriterSettings, private readonly seen: SeenSteps) {
    this.excludes = [...UNINDEXED_LOCK_FIELDS, ...settings.excludeFromIndexes];
  }

  /** Runs a read-check-write in a transaction, re-running it whole when it aborts on contention (for ledger records alone). */
  transact<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return withContentionRetry(() => this.settings.store.transaction(fn), this.settings.contention);
  }

  /** `transact` for a transaction that may write `key`'s lock (with `put`): the duplicate cache forgets the key once it committed. */
  async transaction<T>(key: Key, fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    const result = await this.transact(fn);
    this.seen.forget(key);
    return result;
  }

  /** Writes `lock` on the entity `props` (with the user's `own` properties over them) in `tx`. */
  put(tx: StoreTransaction, key: Key, props: Properties, lock: Lock, own?: Properties): void {
    tx.put(key, writeLock(own ? { ...props, ...own } : props, lock), this.excludes);
  }

  /**
   * Writes `lock` on the entity read as `snapshot` (with the user's `own` properties over it) by a
   * compare-and-swap outside any transaction (`Store.replaceIfUnchanged`); resolves to what was
   * written, or undefined when the entity changed since it was read.
   */
  async replace(key: Key, snapshot: Snapshot, lock: Lock, own?: Properties): Promise<Snapshot | undefined> {
    const props = writeLock(own ? { ...snapshot.properties, ...own } : snapshot.properties, lock);
    const written = await this.settings.store.replaceIfUnchanged(key, snapshot, props, this.excludes);
    if (written) this.seen.observe(key, written.properties, this.settings.clock(), this.settings.leaseDuration);
    return written;
  }

  /** Batch compare-and-swaps of kickoffs (`Store.replaceMany`, which the caller checked is there); each written key is forgotten by the duplicate cache. */
  async replaceMany(writes: readonly BatchLockWrite[]): Promise<ConditionalOutcome[]> {
    const outcomes = await this.settings.store.replaceMany!(writes.map((w) => ({
      read: w.read, properties: writeLock({ ...(w.read.properties ?? {}), ...w.own }, w.lock), excludeFromIndexes: this.excludes, record: w.record,
      ...(w.marker ? { marker: w.marker } : {}),
    })));
    outcomes.forEach((outcome, i) => {
      if (outcome.outcome === 'written') this.seen.forget(writes[i]!.read.key);
    });
    return outcomes;
  }
}
