/**
 * A store wrapper for fan-out tests (faults at the seam, never in the code under test): it
 * delegates every operation to a real store and names each transaction by the record kinds it
 * writes (`LockerFanOut:writing`, `LockerFanOutPage`, `LockerFanOut:sealed`, ...), so a test can
 * make the Nth such operation fail before its commit (nothing applied) or after it (applied, the
 * answer lost), as a crash at that point would leave it. It also counts writes per entity.
 */
import type { Key } from '@google-cloud/datastore';
import type { ConditionalOutcome, ConditionalWrite, DueLedger, KeyQuery, LedgerRecord, LockCount, LockCountQuery, LockPage, LockQuery, RecordQuery, Properties, Snapshot, StepRead, Store, StoreTransaction, VersionedRead } from '../../src/types';
import { StoreUnavailableError } from '../../src/errors/errors';
import { keyString } from '../../src/keys/keys';

/** One fault at a named point. */
export interface SeamFault {
  /**
   * The point: a transaction writing a record of this name (`LockerFanOut:sealed`), or `replaceMany`,
   * `findKeys`; or `replaceMany:outcome`: the batch answers an error outcome for every write instead
   * of rejecting, as DatastoreStore answers a commit that failed on a store fault (UNAVAILABLE, a
   * deadline), applied or not.
   */
  at: string;
  /** Fail after the write applied (the answer is lost) instead of before. */
  applied?: boolean;
  /** How many to fail; default 1. */
  times?: number;
}

export class SeamStore implements Store {
  private faults: Array<Required<SeamFault>> = [];
  /** Points passed, in order. */
  readonly points: string[] = [];
  /** Faults that fired, by point. */
  readonly fired: string[] = [];
  /** Writes per entity (by key identity). */
  readonly writes = new Map<string, number>();

  /** The entity and its step's record in one lookup, where the inner store has it (the take then checks a task against its step). */
  readonly readWithLedger?: (key: Key, id: string) => Promise<StepRead>;

  constructor(private readonly inner: Store) {
    if (inner.readWithLedger) this.readWithLedger = (key, id) => inner.readWithLedger!(key, id);
  }

  get projectId(): string | undefined {
    return this.inner.projectId;
  }

  private holds: Array<{ at: string; until: () => Promise<void>; after: boolean; match?: (key: Key, props: Properties) => boolean }> = [];

  /**
   * Holds the next transaction that passes `at` until `until()` resolves (once): before its commit,
   * or with `after`, once it committed (before the caller sees the answer). With `match`, only a
   * transaction whose put at `at` matches.
   */
  hold(at: string, until: () => Promise<void>, options: { after?: boolean; match?: (key: Key, props: Properties) => boolean } = {}): void {
    this.holds.push({ at, until, after: options.after ?? false, ...(options.match && { match: options.match }) });
  }

  private async holdAt(puts: ReadonlyArray<{ point: string; key: Key; props: Properties }>, after: boolean): Promise<void> {
    const held = this.holds.findIndex((h) => h.after === after && puts.some((p) => p.point === h.at && (!h.match || h.match(p.key, p.props))));
    if (held >= 0) await this.holds.splice(held, 1)[0]!.until();
  }

  inject(fault: SeamFault): void {
    this.faults.push({ applied: false, times: 1, ...fault });
  }

  private hit(points: string[], applied: boolean): void {
    for (const p of points) {
      this.points.push(p);
      const f = this.faults.find((x) => x.at === p && x.applied === applied && x.times > 0);
      if (!f) continue;
      f.times--;
      this.fired.push(`${p}${applied ? ' (applied)' : ''}`);
      throw new StoreUnavailableError(`injected at ${p}${applied ? ', after the write applied' : ''}`);
    }
  }

  private count(key: Key): void {
    const id = keyString(key);
    this.writes.set(id, (this.writes.get(id) ?? 0) + 1);
  }

  async transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    let points: string[] = [];
    let written: Key[] = [];
    let puts: Array<{ point: string; key: Key; props: Properties }> = [];
    const result = await this.inner.transaction(async (tx) => {
      points = [];
      written = [];
      puts = [];
      const wrapped: StoreTransaction = {
        get: (k) => tx.get(k),
        put: (k, p, e) => { points.push(pointOf(k, p)); written.push(k); puts.push({ point: pointOf(k, p), key: k, props: p }); tx.put(k, p, e); },
        delete: (k) => tx.delete(k),
        getLedger: (k, id) => tx.getLedger(k, id),
        putLedger: (r) => tx.putLedger(r),
        deleteLedger: (k, id) => tx.deleteLedger(k, id),
      };
      const out = await fn(wrapped);
      await this.holdAt(puts, false);
      this.hit(points, false);
      return out;
    });
    written.forEach((k) => this.count(k));
    await this.holdAt(puts, true);
    this.hit(points, true);
    return result;
  }

  get(key: Key): Promise<Properties | undefined> { return this.inner.get(key); }
  read(key: Key): Promise<Snapshot | undefined> { return this.inner.read(key); }
  async replaceIfUnchanged(key: Key, s: Snapshot, p: Properties, e: readonly string[]): Promise<Snapshot | undefined> {
    const out = await this.inner.replaceIfUnchanged(key, s, p, e);
    if (out) this.count(key);
    return out;
  }
  listDue(now: Date, limit: number): Promise<DueLedger> { return this.inner.listDue(now, limit); }
  queryLocks(q: LockQuery): Promise<LockPage> { return this.inner.queryLocks!(q); }
  countLocks(q: LockCountQuery): Promise<LockCount> { return this.inner.countLocks!(q); }
  listRecords(q: RecordQuery): Promise<LockPage> { return this.inner.listRecords!(q); }
  readMany(keys: readonly Key[]): Promise<VersionedRead[]> { return this.inner.readMany!(keys); }
  async findKeys(q: KeyQuery): Promise<Key[]> {
    this.hit(['findKeys'], false);
    return this.inner.findKeys!(q);
  }
  async replaceMany(writes: readonly ConditionalWrite[]): Promise<ConditionalOutcome[]> {
    this.hit(['replaceMany'], false);
    const before = this.outcomeFault(writes, false);
    if (before) return before;
    const out = await this.inner.replaceMany!(writes);
    out.forEach((o, i) => { if (o.outcome === 'written') this.count(writes[i]!.read.key); });
    const then = this.afterBatch;
    this.afterBatch = undefined;
    await then?.(writes);
    this.hit(['replaceMany'], true);
    return this.outcomeFault(writes, true) ?? out;
  }

  /** `replaceMany:outcome`: an error outcome per write, when a fault is due. */
  private outcomeFault(writes: readonly ConditionalWrite[], applied: boolean): ConditionalOutcome[] | undefined {
    try {
      this.hit(['replaceMany:outcome'], applied);
      return undefined;
    } catch (error) {
      return writes.map(() => ({ outcome: 'error', error: error as Error }));
    }
  }
  private afterBatch: ((writes: readonly ConditionalWrite[]) => Promise<void>) | undefined;

  /**
   * Runs `then` once, after the next `replaceMany` applied and before its answer (and before a
   * fault at `replaceMany:outcome` with `applied`): what happened while that answer was on its way.
   */
  afterNextBatch(then: (writes: readonly ConditionalWrite[]) => Promise<void>): void {
    this.afterBatch = then;
  }

  init(): Promise<void> { return this.inner.init?.() ?? Promise.resolve(); }
  shutdown(): Promise<void> { return this.inner.shutdown?.() ?? Promise.resolve(); }
}

/** The point a put names: the record kind, with the header's state. */
function pointOf(key: Key, props: Properties): string {
  if (key.kind === 'LockerFanOut') return `LockerFanOut:${String(props.state)}`;
  if (key.kind === 'LockerFanOutChild') return `LockerFanOutChild:${String(props.state)}`;
  return key.kind;
}

export type { LedgerRecord };
