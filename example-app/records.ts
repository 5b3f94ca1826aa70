/**
 * What the example app writes besides its chain entities, through the same `Store` the Locker
 * uses, so the counts hold with several instances:
 *
 * - a `SideEffect` entity per (chain, step), a child of the chain's entity, counting the step's
 *   attempts, the times its side effect ran, and the duplicates of it that were dropped;
 *
 * The chains themselves are found through the library's operator view (`locker.inspect()`).
 * Every write is a read-modify-write transaction, retried when it meets contention.
 */
import type { Datastore, Key } from '@google-cloud/datastore';
import { withContentionRetry, type Properties, type Store } from '../src/index';

/** What happened to one step of a chain. */
export interface StepRecord {
  seq: number;
  /** What the side effect is, e.g. `charged`. */
  effect: string;
  /** Times the step's handler was entered. */
  attempts: number;
  /** Times the side effect ran (succeeded). */
  runs: number;
  /** Duplicate deliveries of the step that were dropped without running. */
  dropped: number;
}

/** A chain the app started: its entity's kind and name. */
export interface ChainRef {
  kind: string;
  name: string;
}

const SIDE_EFFECT_KIND = 'SideEffect';

/** The example's writes meet contention when chains run side by side: retried a little longer than the default. */
const CONTENTION = { attempts: 8 };

/** The app's records in one store, keys in one namespace. */
export class Records {
  constructor(
    private readonly store: Store,
    private readonly keys: Datastore,
    /** The namespace of every key the app writes. */
    readonly namespace: string | undefined,
  ) {}

  /** The key of a chain's entity. */
  chainKey(ref: ChainRef): Key {
    return this.key([ref.kind, ref.name]);
  }

  /** A chain entity's stored properties (lock fields included); undefined when it does not exist. */
  chainEntity(key: Key): Promise<Properties | undefined> {
    return this.store.get(key);
  }

  /** Counts an attempt at step `seq` (before its side effect is tried). Returns the attempts so far. */
  async countAttempt(chain: Key, seq: number, effect: string): Promise<number> {
    return (await this.update(chain, seq, effect, (r) => ({ ...r, attempts: r.attempts + 1 }))).attempts;
  }

  /** Counts one run of step `seq`'s side effect. Returns the runs so far. */
  async countRun(chain: Key, seq: number, effect: string): Promise<number> {
    return (await this.update(chain, seq, effect, (r) => ({ ...r, runs: r.runs + 1 }))).runs;
  }

  /** Counts a dropped duplicate of step `seq`. */
  async countDrop(chain: Key, seq: number): Promise<void> {
    await this.update(chain, seq, undefined, (r) => ({ ...r, dropped: r.dropped + 1 }));
  }

  /** The records of steps 1 to `lastSeq` of a chain that have any. */
  async steps(chain: Key, lastSeq: number): Promise<StepRecord[]> {
    const seqs = Array.from({ length: Math.max(0, lastSeq) }, (_, i) => i + 1);
    const found = await Promise.all(seqs.map(async (seq) => {
      const props = await this.store.get(this.sideEffectKey(chain, seq));
      return props && stepRecord(seq, props);
    }));
    return found.filter((r): r is StepRecord => r !== undefined);
  }

  private async update(chain: Key, seq: number, effect: string | undefined, change: (r: StepRecord) => StepRecord): Promise<StepRecord> {
    const key = this.sideEffectKey(chain, seq);
    return withContentionRetry(() => this.store.transaction(async (tx) => {
      const props = await tx.get(key);
      const before = props ? stepRecord(seq, props) : { seq, effect: '', attempts: 0, runs: 0, dropped: 0 };
      const after = change({ ...before, effect: effect ?? before.effect });
      tx.put(key, { effect: after.effect, attempts: after.attempts, runs: after.runs, dropped: after.dropped }, ['effect', 'attempts', 'runs', 'dropped']);
      return after;
    }), CONTENTION);
  }

  private sideEffectKey(chain: Key, seq: number): Key {
    return this.key([...chain.path, SIDE_EFFECT_KIND, `step-${seq}`]);
  }

  private key(path: (string | number)[]): Key {
    return this.namespace === undefined ? this.keys.key(path) : this.keys.key({ namespace: this.namespace, path });
  }
}

function stepRecord(seq: number, props: Properties): StepRecord {
  const count = (value: unknown): number => (typeof value === 'number' && Number.isSafeInteger(value) ? value : 0);
  return { seq, effect: typeof props.effect === 'string' ? props.effect : '', attempts: count(props.attempts), runs: count(props.runs), dropped: count(props.dropped) };
}

