/**
 * What `locker.recurring()` takes, what a tick answers, and what the operator sees of a schedule.
 */
import type { Key } from '@google-cloud/datastore';
import type { OptionNames } from '../config/option-names';
import type { Json } from '../types';

/** One run of a schedule: its name and the time the expression named (before any jitter). */
export interface RecurringTick {
  /** The schedule's name. */
  name: string;
  /** The scheduled time this run is for. */
  at: Date;
}

/** What to do with a tick that falls while the schedule's previous run is still going. */
export type OverlapPolicy = 'skip' | 'allow' | 'queue';
/** What to do with ticks missed while nothing ticked (an outage, a paused heartbeat). */
export type MisfirePolicy = 'coalesce' | 'each' | 'skip';

/**
 * A schedule as declared in code: `locker.recurring(name, options)`. `K` is the Locker's key type:
 * a Datastore `Key`, or a `DocumentReference` on a `FirestoreStore`.
 */
export interface RecurringOptions<K = Key> {
  /** Five-field cron expression (minute hour day-of-month month day-of-week) or a nickname such as `@daily`. */
  cron: string;
  /** IANA time zone the expression is read in. Defaults to `UTC`. */
  timeZone?: string;
  /** The handler path of each run's first step, e.g. `/payouts`. */
  path: string;
  /**
   * The entity each run's chain starts on. A key (`K`): one entity for every run (a run due while the
   * previous one still runs on it is an overlap). A function: a key per tick, which must give the
   * same key for the same tick (a tick resumed after a crash asks again). Defaults to one entity
   * per schedule, kind `LockerRecurringRun` named by the schedule, in the Locker's `scheduleNamespace`.
   */
  key?: K | ((tick: RecurringTick) => K);
  /**
   * The entity written with a run's first step, as `schedule()` writes its entity. Defaults to
   * `{ schedule: name, scheduledAt: at }`.
   */
  entity?: (tick: RecurringTick) => unknown;
  /** The first step's payload, or a function of the tick. Defaults to `{ schedule: name, scheduledAt: at (ISO) }`. */
  payload?: Json | ((tick: RecurringTick) => Json);
  /**
   * A tick while the previous run's chain is still live: `skip` it (the default), `allow` another
   * run beside it (needs a key per tick), or `queue` one run, started once the previous ends
   * (later ticks while one waits are skipped).
   */
  overlap?: OverlapPolicy;
  /**
   * Ticks missed (nothing ticked in time): `coalesce` them into one run, for the latest (the
   * default); run `each` missed tick no older than `graceMs`; or `skip` them all, running only a
   * tick no older than `graceMs`.
   */
  misfire?: MisfirePolicy;
  /** How late a tick may start and still count (`misfire: 'each'` and `'skip'`). Defaults to 5 minutes. */
  graceMs?: number;
  /** Up to this much random delay for each run's first step (the same for a tick however often it is retried). Defaults to 0. */
  jitterMs?: number;
}

/** Every option name of {@link RecurringOptions}. */
export const RECURRING_OPTION_NAMES: OptionNames<RecurringOptions> = {
  cron: true, timeZone: true, path: true, key: true, entity: true, payload: true, overlap: true, misfire: true, graceMs: true, jitterMs: true,
};

/** The defaults of {@link RecurringOptions}. */
export const RECURRING_DEFAULTS = Object.freeze({
  /** {@link RecurringOptions.timeZone}. */
  timeZone: 'UTC',
  /** {@link RecurringOptions.overlap}. */
  overlap: 'skip' as OverlapPolicy,
  /** {@link RecurringOptions.misfire}. */
  misfire: 'coalesce' as MisfirePolicy,
  /** {@link RecurringOptions.graceMs}, ms (5 min). */
  graceMs: 5 * 60_000,
  /** {@link RecurringOptions.jitterMs}, ms. */
  jitterMs: 0,
});

/** What one tick did. */
export interface TickResult {
  /** Schedules read as due. */
  due: number;
  /** Runs whose chain started (or was found started by an earlier try of the same tick). */
  started: number;
  /** Ticks skipped: by the overlap policy, or missed beyond the misfire policy. */
  skipped: number;
  /** Runs queued behind a live run (`overlap: 'queue'`). */
  queued: number;
  /** Runs not started now (the store failed, or the item was refused): kept, and tried on the next tick when the store failed. */
  failed: number;
  /** Due schedules this code does not declare: marked removed, no longer run (see the guide). */
  removed: string[];
  /** Declared schedules written (new, changed, or declared again after removal). */
  declared: number;
  /** True when the tick stopped at its time budget with schedules still due: the next tick goes on. */
  partial: boolean;
}

/** The last run of a schedule, as kept on its record. */
export interface LastRun {
  /** The tick it was for. */
  at: Date;
  /** What became of it. */
  outcome: 'started' | 'busy' | 'failed' | 'skipped';
  /** The run's entity, as the status page writes keys (`Kind:"name"`). */
  key?: string;
  /** The namespace of the run's entity (`''`: the default one). */
  namespace?: string;
  /** Its chain's id (when started). */
  chain?: string;
  /** Why it failed. */
  error?: string;
  /** When it was settled. */
  settledAt: Date;
}

/** A schedule as the operator sees it: `locker.inspect().schedules()`. */
export interface ScheduleView {
  /** The schedule's name. */
  name: string;
  /** Its cron expression. */
  cron: string;
  /** The IANA zone the expression is read in. */
  timeZone: string;
  /** The handler path of each run's first step. */
  path: string;
  /** Its overlap policy. */
  overlap: OverlapPolicy;
  /** Its misfire policy. */
  misfire: MisfirePolicy;
  /** `active`, `paused` by an operator, or `removed` (no longer declared by the code that ticked). */
  state: 'active' | 'paused' | 'removed';
  /** The next tick (undefined while paused or removed). */
  next?: Date;
  /** The last run. */
  last?: LastRun;
  /** A run waiting for the previous one to end (`overlap: 'queue'`). */
  queued?: Date;
  /** Runs started since the schedule was first declared. */
  started: number;
  /** Ticks skipped since. */
  skipped: number;
  /** When code last declared it. */
  declaredAt: Date;
}
