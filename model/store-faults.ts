/**
 * The model's store seam: one wrapper around the real store that every instance shares, which can
 * be told to fail the next few operations (an outage burst, with or without the write applied
 * first), and one wrapper per instance that makes the instance's store calls hang forever once the
 * instance died (a dead process makes no more writes). The code under test is never edited.
 */
import type { Key } from '@google-cloud/datastore';
import { StoreUnavailableError } from '../src/errors/errors';
import type { ConditionalOutcome, ConditionalWrite, DueLedger, KeyQuery, LedgerNeeded, LockCount, LockCountQuery, LockPage, LockQuery, LedgerRef, Properties, RecordQuery, Snapshot, StepRead, Store, StoreTransaction, VersionedRead } from '../src/types';

/**
 * A promise that never settles: what a call of a dead process returns. A new one each time, so that
 * what waits on it is collected with it once nothing else holds it.
 */
export function never(): Promise<never> {
  return new Promise<never>(() => undefined);
}

/** A shared store that fails the next operations when told (an outage burst). */
export class FaultyStore implements Store {
  /** Operations still to fail, and whether a failing write is applied before it throws. */
  private faults: Array<{ applied: boolean }> = [];
  /** Operations failed so far. */
  failed = 0;

  constructor(readonly inner: Store) {}

  get projectId(): string | undefined {
    return this.inner.projectId;
  }

  /** The next `count` operations fail with `StoreUnavailableError`; writes are applied first when `applied`. */
  outage(count: number, applied: boolean): void {
    for (let i = 0; i < count; i++) this.faults.push({ applied });
  }

  /** Ends every fault. */
  heal(): void {
    this.faults = [];
  }

  private next(): { applied: boolean } | undefined {
    const fault = this.faults.shift();
    if (fault) this.failed++;
    return fault;
  }

  private error(what: string): StoreUnavailableError {
    return new StoreUnavailableError(`model outage: ${what} failed`);
  }

  /** Runs a read: a fault fails it. */
  private async reading<T>(what: string, run: () => Promise<T>): Promise<T> {
    if (this.next()) throw this.error(what);
    return run();
  }

  /** Runs a write: a fault fails it, before it applies or after. */
  private async writing<T>(what: string, run: () => Promise<T>): Promise<T> {
    const fault = this.next();
    if (fault && !fault.applied) throw this.error(what);
    const result = await run();
    if (fault) throw this.error(`${what} (applied)`);
    return result;
  }

  get(key: Key): Promise<Properties | undefined> {
    return this.reading('get', () => this.inner.get(key));
  }

  read(key: Key): Promise<Snapshot | undefined> {
    return this.reading('read', () => this.inner.read(key));
  }

  listDue(now: Date, limit: number): Promise<DueLedger> {
    return this.reading('listDue', () => this.inner.listDue(now, limit));
  }

  replaceIfUnchanged(key: Key, snapshot: Snapshot, properties: Properties, excludes: readonly string[]): Promise<Snapshot | undefined> {
    return this.writing('replace', () => this.inner.replaceIfUnchanged(key, snapshot, properties, excludes));
  }

  transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return this.writing('commit', () => this.inner.transaction(fn));
  }

  get readMany(): ((keys: readonly Key[]) => Promise<VersionedRead[]>) | undefined {
    const inner = this.inner;
    if (!inner.readMany) return undefined;
    return (keys) => this.reading('readMany', () => inner.readMany!(keys));
  }

  get replaceMany(): ((writes: readonly ConditionalWrite[]) => Promise<ConditionalOutcome[]>) | undefined {
    const inner = this.inner;
    if (!inner.replaceMany) return undefined;
    return (writes) => this.writing('replaceMany', () => inner.replaceMany!(writes));
  }

  get readWithLedger(): ((key: Key, id: string) => Promise<StepRead>) | undefined {
    const inner = this.inner;
    if (!inner.readWithLedger) return undefined;
    return (key, id) => this.reading('readWithLedger', () => inner.readWithLedger!(key, id));
  }

  get retireLedgerMany(): ((records: readonly LedgerRef[], needed: LedgerNeeded) => Promise<void>) | undefined {
    const inner = this.inner;
    if (!inner.retireLedgerMany) return undefined;
    return (records, needed) => this.writing('retireLedgerMany', () => inner.retireLedgerMany!(records, needed));
  }

  /** The fan-out sweep's query (without it, a Locker never sweeps fan-outs). */
  get findKeys(): ((query: KeyQuery) => Promise<Key[]>) | undefined {
    const inner = this.inner;
    if (!inner.findKeys) return undefined;
    return (query) => this.reading('findKeys', () => inner.findKeys!(query));
  }

  /** The operator's query: what a bulk operation's pages read (without it, `locker.bulk()` cannot find its targets). */
  get queryLocks(): ((query: LockQuery) => Promise<LockPage>) | undefined {
    const inner = this.inner;
    if (!inner.queryLocks) return undefined;
    return (query) => this.reading('queryLocks', () => inner.queryLocks!(query));
  }

  /** The operator's count: what a bulk operation's `matched` reads. */
  get countLocks(): ((query: LockCountQuery) => Promise<LockCount>) | undefined {
    const inner = this.inner;
    if (!inner.countLocks) return undefined;
    return (query) => this.reading('countLocks', () => inner.countLocks!(query));
  }

  /** The operator's list of records (the schedules' view: `inspect().schedules()`). */
  get listRecords(): ((query: RecordQuery) => Promise<LockPage>) | undefined {
    const inner = this.inner;
    if (!inner.listRecords) return undefined;
    return (query) => this.reading('listRecords', () => inner.listRecords!(query));
  }
}

/** What ends a dead instance's transaction (its body unwinds and the store rolls it back); the instance never sees it. */
class Abandoned extends Error {
  constructor() {
    super('the instance died in this transaction');
    this.name = 'Abandoned';
  }
}

/**
 * One instance's view of the shared store. Once `die()` is called, or once it is armed to die at
 * its next write and that write comes, every call hangs: the instance is a dead process.
 */
export class MortalStore implements Store {
  private dead = false;
  private dieAtWrite = false;
  /** Writes still to apply before it dies just after the last of them (0: no such death armed). */
  private writesToDeath = 0;

  constructor(private readonly inner: Store, private readonly onDeath: () => void) {}

  get projectId(): string | undefined {
    return this.inner.projectId;
  }

  /** Dies now. */
  die(): void {
    if (this.dead) return;
    this.dead = true;
    this.onDeath();
  }

  /** Dies just before its next write (a finish, release, schedule or kickoff is never applied). */
  armAtNextWrite(): void {
    this.dieAtWrite = true;
  }

  /** Dies just after its next write applied (the write landed; the process never saw its answer), or after its `writes`-th write from now. */
  armAfterNextWrite(writes = 1): void {
    this.writesToDeath = writes;
  }

  /** Forgets a death armed at (or after) the next write (the fault is healed before it struck). */
  disarm(): void {
    this.dieAtWrite = false;
    this.writesToDeath = 0;
  }

  get isDead(): boolean {
    return this.dead;
  }

  /** A write applied: whether it was the last before an armed death. */
  private wrote(): boolean {
    if (this.writesToDeath === 0) return false;
    this.writesToDeath -= 1;
    return this.writesToDeath === 0;
  }

  private async call<T>(run: () => Promise<T>, write: boolean): Promise<T> {
    if (write && this.dieAtWrite) this.die();
    if (this.dead) return never();
    const result = await run();
    if (write && this.wrote()) this.die(); // the write applied; its answer is never seen
    if (this.dead) return never(); // died while the call was out: its answer is never seen
    return result;
  }

  get(key: Key): Promise<Properties | undefined> {
    return this.call(() => this.inner.get(key), false);
  }

  read(key: Key): Promise<Snapshot | undefined> {
    return this.call(() => this.inner.read(key), false);
  }

  listDue(now: Date, limit: number): Promise<DueLedger> {
    return this.call(() => this.inner.listDue(now, limit), false);
  }

  replaceIfUnchanged(key: Key, snapshot: Snapshot, properties: Properties, excludes: readonly string[]): Promise<Snapshot | undefined> {
    return this.call(() => this.inner.replaceIfUnchanged(key, snapshot, properties, excludes), true);
  }

  /**
   * A transaction the instance may die in. Once it died, the transaction is never committed, and
   * it ends: its reads reject and its body's outcome is thrown away, so the store rolls it back.
   * A transaction left open would hold its read locks for good on a store that locks (the
   * Firestore emulator in Native mode keeps them for as long as the client lives), where the
   * service ends a dead client's transaction when it expires; the instance sees no answer either way.
   */
  transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return this.call(() => this.inner.transaction(async (tx) => {
      const mortal: StoreTransaction = {
        get: (key) => this.inTransaction(() => tx.get(key)),
        getLedger: (key, id) => this.inTransaction(() => tx.getLedger(key, id)),
        put: (key, props, excludes) => tx.put(key, props, excludes),
        delete: (key) => tx.delete(key),
        putLedger: (record) => tx.putLedger(record),
        deleteLedger: (key, id) => tx.deleteLedger(key, id),
      };
      const result = await fn(mortal);
      if (this.dieAtWrite) this.die();
      if (this.dead) throw new Abandoned(); // never committed: rolled back
      return result;
    }).then((result) => {
      if (this.wrote()) this.die(); // committed; its answer is never seen
      return result;
    }, (error: unknown) => {
      if (this.dead) return never(); // died in it: its answer is never seen
      throw error;
    }), false);
  }

  /** A read inside a transaction: once the instance died, it rejects (its transaction then ends, rolled back). */
  private async inTransaction<T>(read: () => Promise<T>): Promise<T> {
    if (this.dead) throw new Abandoned();
    const result = await read();
    if (this.dead) throw new Abandoned();
    return result;
  }

  get readMany(): ((keys: readonly Key[]) => Promise<VersionedRead[]>) | undefined {
    const inner = this.inner;
    if (!inner.readMany) return undefined;
    return (keys) => this.call(() => inner.readMany!(keys), false);
  }

  get replaceMany(): ((writes: readonly ConditionalWrite[]) => Promise<ConditionalOutcome[]>) | undefined {
    const inner = this.inner;
    if (!inner.replaceMany) return undefined;
    return (writes) => this.call(() => inner.replaceMany!(writes), true);
  }

  get readWithLedger(): ((key: Key, id: string) => Promise<StepRead>) | undefined {
    const inner = this.inner;
    if (!inner.readWithLedger) return undefined;
    return (key, id) => this.call(() => inner.readWithLedger!(key, id), false);
  }

  get retireLedgerMany(): ((records: readonly LedgerRef[], needed: LedgerNeeded) => Promise<void>) | undefined {
    const inner = this.inner;
    if (!inner.retireLedgerMany) return undefined;
    return (records, needed) => this.call(() => inner.retireLedgerMany!(records, needed), true);
  }

  get findKeys(): ((query: KeyQuery) => Promise<Key[]>) | undefined {
    const inner = this.inner;
    if (!inner.findKeys) return undefined;
    return (query) => this.call(() => inner.findKeys!(query), false);
  }

  get queryLocks(): ((query: LockQuery) => Promise<LockPage>) | undefined {
    const inner = this.inner;
    if (!inner.queryLocks) return undefined;
    return (query) => this.call(() => inner.queryLocks!(query), false);
  }

  get countLocks(): ((query: LockCountQuery) => Promise<LockCount>) | undefined {
    const inner = this.inner;
    if (!inner.countLocks) return undefined;
    return (query) => this.call(() => inner.countLocks!(query), false);
  }

  get listRecords(): ((query: RecordQuery) => Promise<LockPage>) | undefined {
    const inner = this.inner;
    if (!inner.listRecords) return undefined;
    return (query) => this.call(() => inner.listRecords!(query), false);
  }
}
