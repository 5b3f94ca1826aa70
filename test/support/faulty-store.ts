/**
 * A fault-injecting wrapper around a real store (the same `Store` interface): it tells the
 * Locker's operations apart by what they read or write (the read; the lock writes take, renew,
 * finish, release, fail; the schedule and kickoff transactions) and makes the ones a test names
 * fail with the error it gives, before the write (nothing applied) or after it (applied, the
 * answer lost). The code under test is never edited to fail.
 */
import type { Key } from '@google-cloud/datastore';
import { readLock } from '../../src/rules/lock-fields';
import { StepState, type DueLedger, type LedgerRecord, type Properties, type Snapshot, type Store, type StoreTransaction } from '../../src/types';

/** The operations a fault can hit. */
export type StoreOp = 'read' | 'take' | 'renew' | 'finish' | 'release' | 'fail' | 'schedule' | 'kickoff' | 'other';

/** One fault: which operation, what it throws, how often, and whether the write applies first. */
export interface Fault {
  op: StoreOp;
  error: () => Error;
  /** How many of the next such operations fail. Defaults to 1; `Infinity` for an outage. */
  times?: number;
  /** Apply the write, then throw (the store did it, the answer was lost). Defaults to false. */
  applied?: boolean;
}

/** What a lock write is, from the lock before and after it. */
export function writeKind(before: Properties, after: Properties): StoreOp {
  const was = readLock(before);
  const now = readLock(after);
  if (now.state === StepState.failed && was.state !== StepState.failed) return 'fail';
  if (now.seq === was.seq + 1 && now.state === StepState.complete) return 'finish';
  if (now.req === '' && was.req !== '' && now.seq === was.seq && now.state === StepState.scheduled) return 'release';
  if (now.req !== '' && now.req !== was.req) return 'take';
  if (now.req !== '' && now.req === was.req && now.seq === was.seq) return 'renew';
  return 'other';
}

export class FaultyStore implements Store {
  /** Every operation seen, in order, with whether it failed. */
  readonly seen: Array<{ op: StoreOp; failed: boolean }> = [];
  private faults: Array<Required<Fault>> = [];
  private readonly waiters: Array<{ op: StoreOp; count: number; resolve: () => void }> = [];

  constructor(private readonly inner: Store) {}

  get projectId(): string | undefined {
    return this.inner.projectId;
  }

  /** Makes the next `times` operations `op` fail with `error()`. */
  inject(fault: Fault): void {
    this.faults.push({ times: 1, applied: false, ...fault });
  }

  /** Stops every fault. */
  heal(): void {
    this.faults = [];
  }

  /** How many operations `op` were seen (failed ones included). */
  count(op: StoreOp, failed?: boolean): number {
    return this.seen.filter((s) => s.op === op && (failed === undefined || s.failed === failed)).length;
  }

  /** Resolves once `count` operations `op` have been seen in all. */
  until(op: StoreOp, count: number): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push({ op, count, resolve });
      this.wake();
    });
  }

  async read(key: Key): Promise<Snapshot | undefined> {
    this.fire('read', false);
    return this.inner.read(key);
  }

  async get(key: Key): Promise<Properties | undefined> {
    this.fire('read', false);
    return this.inner.get(key);
  }

  async replaceIfUnchanged(key: Key, snapshot: Snapshot, props: Properties, excludes: readonly string[]): Promise<Snapshot | undefined> {
    const op = writeKind(snapshot.properties, props);
    const fault = this.take(op);
    if (fault && !fault.applied) return this.failWith(op, fault);
    const written = await this.inner.replaceIfUnchanged(key, snapshot, props, excludes);
    if (fault) return this.failWith(op, fault);
    this.record(op, false);
    return written;
  }

  async transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    let op: StoreOp = 'other';
    let fault: Required<Fault> | undefined;
    const result = await this.inner.transaction(async (tx) => {
      const before = new Map<string, Properties>();
      const wrapped: StoreTransaction = {
        get: async (key) => {
          const props = await tx.get(key);
          before.set(JSON.stringify(key.path), props ?? {});
          return props;
        },
        put: (key, props, excludes) => {
          const was = readLock(before.get(JSON.stringify(key.path)) ?? {});
          op = was.state === StepState.scheduled && was.req !== '' ? 'schedule' : 'kickoff';
          tx.put(key, props, excludes);
        },
        delete: (key) => tx.delete(key),
        getLedger: (key, id) => tx.getLedger(key, id),
        putLedger: (record: LedgerRecord) => tx.putLedger(record),
        deleteLedger: (key, id) => tx.deleteLedger(key, id),
      };
      const value = await fn(wrapped);
      fault = op === 'other' ? undefined : this.take(op);
      if (fault && !fault.applied) this.failWith(op, fault);
      return value;
    });
    if (fault) this.failWith(op, fault);
    if (op !== 'other') this.record(op, false);
    return result;
  }

  async init(): Promise<void> {
    await this.inner.init?.();
  }

  async shutdown(): Promise<void> {
    await this.inner.shutdown?.();
  }

  listDue(now: Date, limit: number): Promise<DueLedger> {
    return this.inner.listDue(now, limit);
  }


  private fire(op: StoreOp, applied: boolean): void {
    const fault = this.take(op);
    if (fault && fault.applied === applied) this.failWith(op, fault);
    if (!fault) this.record(op, false);
  }

  private take(op: StoreOp): Required<Fault> | undefined {
    const fault = this.faults.find((f) => f.op === op && f.times > 0);
    if (fault) fault.times--;
    return fault;
  }

  private failWith(op: StoreOp, fault: Required<Fault>): never {
    this.record(op, true);
    throw fault.error();
  }

  private record(op: StoreOp, failed: boolean): void {
    this.seen.push({ op, failed });
    this.wake();
  }

  private wake(): void {
    for (const w of [...this.waiters]) {
      if (this.count(w.op) >= w.count) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }
}
