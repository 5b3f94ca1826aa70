/**
 * The lock part (docs/design.md, section 15): the one part that reads and writes locks. It reads an
 * entity with its parsed lock (`read`), owns the compare-and-swap loop every writer of a lock used
 * to write for itself (`swap`: read → decide → replace → re-read → retry, bounded, with backoff),
 * and runs transactions that hand over the parsed lock (`update`). Every caller applies a named
 * transition of `rules/transitions.ts` and hands the `Lock` it made here; this part turns it into
 * properties (`writeLock`), keeps the lock fields and `excludeFromIndexes` out of indexes, retries a
 * transaction whole when it aborts on contention, and keeps the duplicate cache true after every
 * kind of write (a compare-and-swap records what it wrote, a transaction forgets the key), so no
 * caller has to remember it.
 */
import type { Key } from '@google-cloud/datastore';
import { ContentionError } from '../errors/errors';
import { readLock, UNINDEXED_LOCK_FIELDS, writeLock, type Lock } from '../rules/lock-fields';
import type { SeenSteps } from './seen-steps';
import type { ConditionalOutcome, ConditionalWrite, LedgerRecord, Properties, Snapshot, StepRead, Store, StoreTransaction, VersionedRead } from '../types';
import { keyPath } from '../keys/key-codec';
import { contentionRetry, type ContentionRetry, type ContentionRetryOptions } from './retry';

/** What the lock part is built with: the store, and the few settings it reads. */
export interface LocksSettings {
  readonly store: Store;
  readonly contention: ContentionRetryOptions;
  readonly clock: () => number;
  readonly leaseDuration: number;
  readonly excludeFromIndexes: readonly string[];
}

/** The names of {@link LocksSettings}: what the Locker builds the lock part's settings from. */
export const LOCKS_SETTINGS = ['store', 'contention', 'clock', 'leaseDuration', 'excludeFromIndexes'] as const satisfies ReadonlyArray<keyof LocksSettings>;

/** One entity of a batch kickoff: the version read, the lock to write, the user's own properties and the step's record. */
export interface BatchLockWrite {
  read: VersionedRead;
  lock: Lock;
  own: Properties;
  record: LedgerRecord;
  /** The kickoff's record of the chain it starts (see `ConditionalWrite.marker`). */
  marker?: ConditionalWrite['marker'];
}

/** An entity as read, with its lock parsed. */
export interface LockRead {
  snapshot: Snapshot;
  lock: Lock;
}

/** An entity read in a transaction, with its lock parsed. */
export interface LockInTx {
  props: Properties;
  lock: Lock;
}

/**
 * What a compare-and-swap's `decide` makes of what it read: nothing to write (`done`, the swap's
 * result), or the lock to write (with the user's `own` properties over the stored ones) and what
 * the swap resolves to once it is written.
 */
export type SwapStep<T> = { done: T } | { write: Lock; own?: Properties; then: (written: Snapshot, read: LockRead) => T };

/** The lock part (see the file's comment); built once per Locker. */
export class Locks {
  private readonly excludes: readonly string[];
  private readonly retry: ContentionRetry;

  constructor(private readonly settings: LocksSettings, private readonly seen: SeenSteps) {
    this.excludes = [...UNINDEXED_LOCK_FIELDS, ...settings.excludeFromIndexes];
    this.retry = contentionRetry(settings.contention);
  }

  /** The entity `key` and its parsed lock, strongly consistent; undefined when it does not exist. */
  async read(key: Key): Promise<LockRead | undefined> {
    const snapshot = await this.settings.store.read(key);
    return snapshot && { snapshot, lock: readLock(snapshot.properties) };
  }

  /** Whether the store reads an entity and a ledger record in one lookup (`readWithRecord`). */
  get readsWithRecord(): boolean {
    return this.settings.store.readWithLedger !== undefined;
  }

  /** The entity `key` and its ledger record `id`, in one lookup (only where `readsWithRecord`). */
  readWithRecord(key: Key, id: string): Promise<StepRead> {
    return this.settings.store.readWithLedger!(key, id);
  }

  /** Whether the store has the batch operations a batched kickoff uses (`readMany`, `replaceMany`). */
  get batches(): boolean {
    return this.settings.store.readMany !== undefined && this.settings.store.replaceMany !== undefined;
  }

  /** The versioned reads of `keys`, in order, in one lookup (only where `batches`). */
  readMany(keys: readonly Key[]): Promise<VersionedRead[]> {
    return this.settings.store.readMany!(keys);
  }

  /**
   * A compare-and-swap on `key`'s lock that owns the whole loop: `decide` is shown what was read
   * (`from` first, then what is there after each lost race) and says what to write, or that
   * nothing is; when another writer got there first, the entity is read again and decided again
   * (bounded, with backoff; `what` names the writer in the contention error).
   */
  swap<T>(key: Key, what: string, from: LockRead | undefined, decide: (current: LockRead | undefined) => SwapStep<T>): Promise<T> {
    let current = from;
    return this.retry(async () => {
      const step = decide(current);
      if ('done' in step) return step.done;
      const read = current!;
      const written = await this.replace(key, read.snapshot, step.write, step.own);
      if (written) return step.then(written, read);
      current = await this.read(key);
      throw new ContentionError(`${keyPath(key)} changed while ${what}`);
    });
  }

  /** Runs a read-check-write in a transaction, re-running it whole when it aborts on contention (for ledger records alone). */
  transact<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return this.retry(() => this.settings.store.transaction(fn));
  }

  /** `transact` for a transaction that may write `key`'s lock (with `put`): the duplicate cache forgets the key once it committed. */
  async transaction<T>(key: Key, fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    const result = await this.transact(fn);
    this.seen.forget(key);
    return result;
  }

  /**
   * `transaction` that reads `key` first and hands `fn` the entity with its parsed lock (undefined
   * when it does not exist): a read-check-write of the lock, re-run whole on contention.
   */
  update<T>(key: Key, fn: (tx: StoreTransaction, found: LockInTx | undefined) => Promise<T> | T): Promise<T> {
    return this.transaction(key, async (tx) => {
      const props = await tx.get(key);
      return fn(tx, props && { props, lock: readLock(props) });
    });
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
  private async replace(key: Key, snapshot: Snapshot, lock: Lock, own?: Properties): Promise<Snapshot | undefined> {
    const props = writeLock(own ? { ...snapshot.properties, ...own } : snapshot.properties, lock);
    const written = await this.settings.store.replaceIfUnchanged(key, snapshot, props, this.excludes);
    if (written) this.seen.observe(key, written.properties, this.settings.clock(), this.settings.leaseDuration);
    return written;
  }

  /** Batch compare-and-swaps of kickoffs (only where `batches`); each written key is forgotten by the duplicate cache. */
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
