/**
 * What `locker.scheduleMany()` takes and answers: the items to kick off, its options, its progress
 * and one result per item.
 */
import type { Key } from '@google-cloud/datastore';
import type { OptionNames } from '../config/option-names';
import type { Json } from '../types';

/** One chain to start: what `locker.schedule(key, entity, path, payload, { at: scheduleTime })` takes; `K` is the store's key type. */
export interface KickoffItem<K = Key> {
  /** The entity's key; each key at most once in a call. */
  key: K;
  /** The entity to save with the chain's first step (its lock fields are the Locker's). */
  entity: unknown;
  /** The handler path of the first step, e.g. `/invoice`. */
  path: string;
  /** The first step's payload. */
  payload?: Json;
  /** When the first step should run (at most 30 days ahead); at once when absent or past. */
  scheduleTime?: Date;
}

/** How far a `scheduleMany()` call is: items settled so far, by outcome. */
export interface KickoffProgress {
  /** Items in the call. */
  total: number;
  /** Items settled: started (their task sent or left to the sweep), busy or failed. */
  done: number;
  /** Items whose chain started (or had been started by an earlier run of the same kickoff). */
  started: number;
  /** Items whose entity runs another chain's step. */
  busy: number;
  /** Items not started. */
  failed: number;
}

/** Options of `locker.scheduleMany()`. */
export interface ScheduleManyOptions {
  /**
   * Names this kickoff, e.g. `invoices-2026-11`: the chains it starts carry it (in their chain id),
   * so a call made again with the same id (after a crash, or to be sure) never starts a chain twice
   * on an entity: it recognises the chains it started and reports them `started` with `resumed`.
   * Use a new id for a new run. Defaults to a random id (returned in the result): a call made
   * again without it reports the chains still running as `busy`, and starts new ones on the
   * entities whose chains finished meanwhile.
   */
  kickoffId?: string;
  /** Tasks created at once. Defaults to 32. */
  concurrency?: number;
  /**
   * Called as items settle (after each batch is written, and as tasks are created), e.g. for a
   * progress line. A listener that throws is logged and ignored.
   */
  onProgress?: (progress: KickoffProgress) => void;
}

/** Every option name of {@link ScheduleManyOptions}. */
export const SCHEDULE_MANY_OPTION_NAMES: OptionNames<ScheduleManyOptions> = { kickoffId: true, concurrency: true, onProgress: true };

/** Every default of {@link ScheduleManyOptions}. */
export const SCHEDULE_MANY_DEFAULTS = Object.freeze({
  /** Tasks created at once. */
  concurrency: 32,
});

/** What became of one item; `K` is the store's key type. */
export type KickoffResult<K = Key> =
  | {
    /** The chain started (or, with `resumed`, had been started by an earlier run of this kickoff). */
    status: 'started';
    /** The item's key. */
    key: K;
    /** The step the chain is at: its first step, unless it moved on since an earlier run started it. */
    seq: number;
    /** The name of the step's task. */
    task: string;
    /** Whether its task was created by this call; if not, `sweep()` sends it once it stalls (or it ran already). */
    sent: boolean;
    /** True when an earlier run of this kickoff (same `kickoffId`) started the chain. */
    resumed: boolean;
  }
  | {
    /** Another chain's step is scheduled or running on the entity: left unchanged, as `schedule()` refuses with `ChainBusyError`. */
    status: 'busy';
    /** The item's key. */
    key: K;
    /** The step that is scheduled or running. */
    seq: number;
    /** Whether an attempt holds its lease (running) or not (scheduled). */
    running: boolean;
  }
  | {
    /**
     * Not started: the item is invalid (`TypeError`, `RangeError`), the store refused the entity
     * (`StoreRejectedError`) or could not be reached (`StoreUnavailableError`: the chain may have
     * started nonetheless; the sweep then sends its task, and a call made again with the same
     * `kickoffId` reports it).
     */
    status: 'failed';
    /** The item's key. */
    key: K;
    /** Why it was not started. */
    error: Error;
  };

/** What `locker.scheduleMany()` answers; `K` is the store's key type. */
export interface ScheduleManyResult<K = Key> {
  /** The kickoff's id: the one given, or the random one it made. */
  kickoffId: string;
  /** One result per item, in the items' order, each with the item's own key. */
  results: KickoffResult<K>[];
  /** Results `started`. */
  started: number;
  /** Results `busy`. */
  busy: number;
  /** Results `failed`. */
  failed: number;
}
