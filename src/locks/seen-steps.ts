/**
 * What this process last saw of each entity's lock, so a repeated duplicate is answered without
 * a round trip. Only answers that are safe on stale knowledge come from here:
 *
 * - dropping a task whose step is behind the `lock_seq` seen: sequences only grow, so the step is
 *   still finished (a task of an earlier chain is dropped either way);
 * - refusing a task whose step was seen held by another attempt with a fresh lease: a refusal only
 *   delays (the queue retries), and the `Retry-After` it gives is the lease's own. A refusal costs
 *   the task a Cloud Tasks attempt, though, and the holder may finish on another instance without
 *   this one hearing of it; so a refusal is answered from here only within `REFUSAL_TTL_MS` of the
 *   read or write that saw the lease held (and never past the lease's own staleness). After that
 *   the store is read again.
 *
 * Everything else (a free lease, a stale one, a step not seen) goes to the store, and so does a
 * task for a step seen failed or cancelled: neither is final knowledge. `locker.retry()` makes a
 * failed step scheduled again at the same `lock_seq` and chain, from any process, so a step seen
 * failed may be running again by the time a task for it arrives; dropping that task from memory
 * would hold the step up (or lose it, for its last task). A failed step's duplicates are rare (the
 * failure was answered 200), so deciding them on a read costs little. Entries live at
 * most `ttlMs` and at most `size` are kept (least recently used go first, by `lru-cache`), so
 * memory is bounded and knowledge of an entity deleted and created again by another process is
 * short-lived.
 */
import type { Key } from '@google-cloud/datastore';
import { LRUCache } from 'lru-cache';
import type { Decision } from '../rules/decision';
import { DropReason } from '../rules/decision';
import { keyIdentity } from '../keys/key-path';
import { readLock } from '../rules/lock-fields';
import { StepState, type Properties } from '../types';

interface Seen {
  chain: string | undefined;
  seq: number;
  state: StepState | undefined;
  /** The attempt holding the lease, and when that lease goes stale (epoch ms). */
  holder: string;
  staleAt: number;
  /** Until when a refusal may be answered from this entry (epoch ms). */
  refuseUntil: number;
  /** When this entry is forgotten (epoch ms). */
  expires: number;
}

export interface SeenStepsOptions {
  /** Entities remembered at most. */
  size: number;
  /** How long an entry is trusted, ms. */
  ttlMs: number;
}

/**
 * How long after a lease was seen held a duplicate is refused without a read, ms: long enough to
 * absorb a burst of duplicates, short enough that a step finished on another instance costs its
 * duplicates at most one more refusal each.
 */
export const REFUSAL_TTL_MS = 1_000;

/** The lock each entity was last seen with, by key. */
export class SeenSteps {
  private readonly entries: LRUCache<string, Seen> | undefined;
  /** This process's attempt in flight at each (entity, step), if any. */
  private readonly inFlight = new Map<string, Promise<unknown>>();

  constructor(private readonly options: SeenStepsOptions) {
    this.entries = options.size > 0 ? new LRUCache<string, Seen>({ max: options.size }) : undefined;
  }

  /** The answer to a task for step `seq` (of `chain`, if it says), when what was seen decides it safely. */
  recall(key: Key, seq: number, chain: string | undefined, now: number): Decision | undefined {
    if (!this.entries) return undefined;
    const id = keyIdentity(key);
    const seen = this.entries.get(id);
    if (!seen) return undefined;
    if (now >= seen.expires) {
      this.entries.delete(id);
      return undefined;
    }
    if (chain !== seen.chain) return undefined;
    if (seq < seen.seq) return { action: 'drop', reason: DropReason.finished };
    if (seq > seen.seq) return undefined;
    if (seen.state === StepState.scheduled && seen.holder !== '' && now < seen.refuseUntil) {
      return { action: 'refuse', holder: seen.holder, retryAfterMs: seen.staleAt - now };
    }
    return undefined;
  }

  /** Remembers an entity's lock as read or written now; a missing entity is forgotten. */
  observe(key: Key, props: Properties | undefined, now: number, leaseDuration: number): void {
    if (!this.entries) return;
    const id = keyIdentity(key);
    if (!props) {
      this.entries.delete(id);
      return;
    }
    const lock = readLock(props);
    const staleAt = (lock.ts?.getTime() ?? 0) + leaseDuration;
    this.entries.set(id, {
      chain: lock.chain,
      seq: lock.seq,
      state: lock.state,
      holder: lock.req,
      staleAt,
      refuseUntil: Math.min(staleAt, now + Math.min(REFUSAL_TTL_MS, this.options.ttlMs)),
      expires: now + this.options.ttlMs,
    });
  }

  /**
   * Runs `attempt` as this process's attempt at step `seq` of `key`. A copy of the task that
   * arrives while another attempt at the same step is in flight here first waits for it to end (at
   * most `REFUSAL_TTL_MS`), so it is answered from what that attempt saw and wrote (a duplicate of
   * the finished step, dropped) instead of racing it to the store: simultaneous deliveries of one
   * step cost one step's round trips. Off with the cache.
   */
  coalesce<T>(key: Key, seq: number, attempt: () => Promise<T>): Promise<T> {
    if (!this.entries) return attempt();
    const id = `${keyIdentity(key)}\u0000${seq}`;
    const ahead = this.inFlight.get(id);
    // Not an async function: the usual attempt, with none ahead, starts at once and its own promise is handed on.
    return ahead ? settledWithin(ahead, REFUSAL_TTL_MS).then(() => this.run(id, attempt)) : this.run(id, attempt);
  }

  private run<T>(id: string, attempt: () => Promise<T>): Promise<T> {
    const mine = attempt();
    if (!this.inFlight.has(id)) {
      this.inFlight.set(id, mine);
      const clear = (): void => {
        if (this.inFlight.get(id) === mine) this.inFlight.delete(id);
      };
      mine.then(clear, clear);
    }
    return mine;
  }

  /** Forgets an entity (after a write whose result is not at hand). */
  forget(key: Key): void {
    this.entries?.delete(keyIdentity(key));
  }

  /** Entities remembered now. */
  get size(): number {
    return this.entries?.size ?? 0;
  }
}

/** Resolves when `promise` settles or `ms` passed, whichever comes first; never rejects. */
function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    promise.then(done, done);
  });
}
