/**
 * A store wrapper for the fan-out benchmark: it delegates every operation, optional ones included,
 * to the store under measurement, and counts the writes each entity (and each ledger record)
 * receives in each wall-clock second, so the benchmark can report the most writes any one entity
 * received in any one second.
 */
import type { Key } from '@google-cloud/datastore';
import type {
  ConditionalOutcome, ConditionalWrite, DueLedger, KeyQuery, LedgerNeeded, LedgerRef, LockPage, LockQuery, Properties, Snapshot, StepRead, Store, StoreTransaction, VersionedRead,
} from '../src/types';
import { keyString } from '../src/keys/keys';

/** The entity written most in one second. */
export interface HottestEntity {
  /** The entity (`kind:...`) or ledger record (`ledger:<id>`). */
  entity: string;
  /** Its writes in that second. */
  writes: number;
}

/** One write of an entity of a watched kind: when, and the lock it wrote. */
export interface WatchedWrite {
  /** Wall-clock ms (`Date.now()`). */
  at: number;
  entity: string;
  /** `seq/state/held|free` of the lock fields written, or `deleted`. */
  lock: string;
}

/** Counts writes per entity per second; delegates everything (the inner store must have every optional operation, as `DatastoreStore` has). */
export class CountingStore implements Store {
  /** Writes per `second|entity`. */
  private perSecond = new Map<string, number>();
  /** Writes per entity, since the last reset. */
  readonly total = new Map<string, number>();
  /** The most writes of one entity, per kind. */
  private byKind = new Map<string, number>();
  /** Each entity's kind. */
  private kinds = new Map<string, string>();
  /** The writes of the watched kinds since the last reset, in order. */
  readonly watched: WatchedWrite[] = [];

  /** `watch`: kinds whose every write is also recorded with its time and lock (`watched`). */
  constructor(private readonly inner: Store, private readonly watch: readonly string[] = []) {}

  get projectId(): string | undefined {
    return this.inner.projectId;
  }

  /** Forgets the counts. */
  reset(): void {
    this.perSecond.clear();
    this.watched.length = 0;
    this.total.clear();
    this.byKind.clear();
    this.kinds.clear();
  }

  /**
   * The entity written most in any one second since the last reset; with `kinds`, among entities
   * of those kinds only; with `during` (wall-clock ms, `Date.now()`), in the seconds of that span only.
   */
  hottest(kinds?: readonly string[], during?: { from: number; to: number }): HottestEntity {
    let best: HottestEntity = { entity: '', writes: 0 };
    for (const [at, writes] of this.perSecond) {
      const entity = at.slice(at.indexOf('|') + 1);
      if (kinds && !kinds.includes(this.kinds.get(entity) ?? '')) continue;
      const second = Number(at.slice(0, at.indexOf('|')));
      if (during && (second < Math.floor(during.from / 1000) || second > Math.floor(during.to / 1000))) continue;
      if (writes > best.writes) best = { entity, writes };
    }
    return best;
  }

  /** The most writes any one entity of kind `kind` received since the last reset. */
  mostWritesOfKind(kind: string): number {
    return this.byKind.get(kind) ?? 0;
  }

  private count(entity: string, kind = 'LockerOutbox', props?: Properties): void {
    if (this.watch.includes(kind)) this.watched.push({ at: Date.now(), entity, lock: props ? `${String(props.lock_seq)}/${String(props.lock_state)}/${props.lock_req ? 'held' : 'free'}` : 'deleted' });
    const at = `${Math.floor(Date.now() / 1000)}|${entity}`;
    this.perSecond.set(at, (this.perSecond.get(at) ?? 0) + 1);
    this.kinds.set(entity, kind);
    const total = (this.total.get(entity) ?? 0) + 1;
    this.total.set(entity, total);
    this.byKind.set(kind, Math.max(this.byKind.get(kind) ?? 0, total));
  }

  async transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    const written: Array<{ key: Key; props?: Properties }> = [];
    const ledger: string[] = [];
    const result = await this.inner.transaction(async (tx) => {
      written.length = 0; // a retried transaction counts its last attempt only
      ledger.length = 0;
      return fn({
        get: (k) => tx.get(k),
        put: (k, p, e) => { written.push({ key: k, props: p }); tx.put(k, p, e); },
        delete: (k) => { written.push({ key: k }); tx.delete(k); },
        getLedger: (k, id) => tx.getLedger(k, id),
        putLedger: (r) => { ledger.push(`ledger:${r.task}`); tx.putLedger(r); },
        deleteLedger: (k, id) => { ledger.push(`ledger:${id}`); tx.deleteLedger(k, id); },
      });
    });
    const seen = new Set<string>();
    for (const { key: k, props } of written.reverse()) if (!seen.has(keyString(k))) { seen.add(keyString(k)); this.count(keyString(k), k.kind, props); } // an entity put twice: its last put
    for (const id of new Set(ledger)) this.count(id);
    return result;
  }

  get(key: Key): Promise<Properties | undefined> { return this.inner.get(key); }
  read(key: Key): Promise<Snapshot | undefined> { return this.inner.read(key); }
  async replaceIfUnchanged(key: Key, s: Snapshot, p: Properties, e: readonly string[]): Promise<Snapshot | undefined> {
    const out = await this.inner.replaceIfUnchanged(key, s, p, e);
    if (out) this.count(keyString(key), key.kind, p);
    return out;
  }
  listDue(now: Date, limit: number): Promise<DueLedger> { return this.inner.listDue(now, limit); }
  async replaceMany(writes: readonly ConditionalWrite[]): Promise<ConditionalOutcome[]> {
    const out = await this.inner.replaceMany!(writes);
    out.forEach((o, i) => { if (o.outcome === 'written') this.count(keyString(writes[i]!.read.key), writes[i]!.read.key.kind, writes[i]!.properties); });
    return out;
  }
  readWithLedger(key: Key, id: string): Promise<StepRead> { return this.inner.readWithLedger!(key, id); }
  queryLocks(q: LockQuery): Promise<LockPage> { return this.inner.queryLocks!(q); }
  findKeys(q: KeyQuery): Promise<Key[]> { return this.inner.findKeys!(q); }
  readMany(keys: readonly Key[]): Promise<VersionedRead[]> { return this.inner.readMany!(keys); }
  async retireLedgerMany(records: readonly LedgerRef[], needed: LedgerNeeded): Promise<void> {
    await this.inner.retireLedgerMany!(records, needed);
    for (const r of records) this.count(`ledger:${r.id}`); // a record kept (still needed) is counted too
  }
  init(): Promise<void> { return this.inner.init?.() ?? Promise.resolve(); }
  shutdown(): Promise<void> { return this.inner.shutdown?.() ?? Promise.resolve(); }
}

