/**
 * Recurring work in the model (issue 39): the schedules every instance declares, what the model
 * sees of the ticks, the operator's pause, resume and run-now calls, and the schedules' views
 * after quiet. The oracle's rule (r) reads these (oracle-recurring.ts).
 *
 * Three schedules, each on a per-minute or two-minute expression, so that the model's clock moves
 * past their times between commands:
 * - `r-min`: every minute, the default fixed entity (`LockerRecurringRun`, in the Locker's
 *   `scheduleNamespace`: the model's namespace), overlap `skip`, misfire `coalesce` (the defaults);
 * - `r-each`: every minute, a key per tick, overlap `allow`, misfire `each` with a grace of 90 s;
 * - `r-old`: every two minutes, a key per tick, overlap `allow`, misfire `skip` with a grace of
 *   60 s. An instance that runs the "new" code (`declares: 'new'`) does not declare it: its tick
 *   marks it removed, and the next tick of the old code declares it again.
 */
import { Key } from '@google-cloud/datastore';
import type { Locker } from '../src/locker';
import type { MisfirePolicy, OverlapPolicy, ScheduleView } from '../src/recurring/recurring-types';

/** The route of a schedule's first step. */
export const RECURRING_ROUTE = '/recurring';
/** The kind of a per-tick run entity. */
export const RECURRING_KIND = 'ModelRecurring';

/** A schedule of the model, as the oracle needs it. */
export interface ModelSchedule {
  name: string;
  cron: string;
  /** The expression's period, ms (every time is a multiple of it from the epoch). */
  periodMs: number;
  overlap: OverlapPolicy;
  misfire: MisfirePolicy;
  graceMs: number;
  /** `fixed`: the default entity, one for every run; `per-tick`: one entity per scheduled time. */
  key: 'fixed' | 'per-tick';
  /** Declared by the old code only (an instance of the new code does not declare it). */
  oldOnly: boolean;
}

export const SCHEDULES: readonly ModelSchedule[] = Object.freeze([
  { name: 'r-min', cron: '* * * * *', periodMs: 60_000, overlap: 'skip', misfire: 'coalesce', graceMs: 5 * 60_000, key: 'fixed', oldOnly: false },
  { name: 'r-each', cron: '* * * * *', periodMs: 60_000, overlap: 'allow', misfire: 'each', graceMs: 90_000, key: 'per-tick', oldOnly: false },
  { name: 'r-old', cron: '*/2 * * * *', periodMs: 120_000, overlap: 'allow', misfire: 'skip', graceMs: 60_000, key: 'per-tick', oldOnly: true },
]);

export const SCHEDULE_NAMES = SCHEDULES.map((s) => s.name);

/** The code an instance runs: `old` declares every schedule, `new` leaves `r-old` out. */
export type Declares = 'old' | 'new';

/** Whether code `declares` declares `schedule`. */
export function declaresIt(declares: Declares, schedule: string): boolean {
  return declares === 'old' || !SCHEDULES.find((s) => s.name === schedule)?.oldOnly;
}

/** The entity name of a per-tick run (`<schedule>@<ISO time>`). */
export function tickEntity(schedule: string, at: Date): string {
  return `${schedule}@${at.toISOString()}`;
}

/** Declares the schedules of `declares` on `locker`; per-tick runs go to `RECURRING_KIND` in `namespace`. */
export function declareSchedules(locker: Locker, declares: Declares, namespace: string | undefined): void {
  for (const s of SCHEDULES) {
    if (!declaresIt(declares, s.name)) continue;
    const key = s.key === 'fixed' ? undefined : (tick: { at: Date }) => new Key({ ...(namespace ? { namespace } : {}), path: [RECURRING_KIND, tickEntity(s.name, tick.at)] });
    locker.recurring(s.name, {
      cron: s.cron, path: RECURRING_ROUTE, overlap: s.overlap, misfire: s.misfire, graceMs: s.graceMs, ...(key ? { key } : {}),
    });
  }
}

/** One call that ticks (`tick()`, or a `sweep()`, which ticks first), as the model saw it. */
export interface TickSeen {
  /** The order the calls began in (ticks, pauses and resumes share it). */
  serial: number;
  /** The model's clock when it was called (the tick's `now`). */
  now: number;
  /** The operation it ran in (calls in one operation run at once). */
  op: number;
  /** The code of the instance that ticked. */
  declares: Declares;
  /** It answered, the tick whole (no error, not partial); false: it failed, or its instance died. */
  ok: boolean;
  /** Runs it could not start (`TickResult.failed`: they stay pending), when it answered. */
  failed: number | undefined;
  /** What it answered, for reports. */
  note: string;
}

/** An operator's pause or resume of a schedule, as the model saw it. */
export interface ControlSeen {
  /** The order the calls began in (ticks, pauses and resumes share it). */
  serial: number;
  action: 'pause' | 'resume';
  schedule: string;
  now: number;
  op: number;
  /** It answered (true or false); false: it threw, or its instance died. */
  answered: boolean;
}

/** An operator's run-now, as the model saw it. */
export interface RunNowSeen {
  schedule: string;
  id: string;
  /** The model's clock at the call (a time no tick has: see `RunNow`). */
  now: number;
  op: number;
  /** The answer: the time the run is for and its outcome; undefined when it threw or its instance died. */
  answer?: { at: string; outcome: string };
  /** Why it threw, for reports. */
  error?: string;
}

/** What the model saw of recurring work in one sequence. */
export interface RecurringSeen {
  ticks: TickSeen[];
  controls: ControlSeen[];
  runNows: RunNowSeen[];
  /** The schedules as the operator's view showed them after quiet (read from an instance of the old code). */
  views: ScheduleView[];
  /** The lock state of every run entity a recurring task named, read from the store after quiet. */
  finalStates: Map<string, string | undefined>;
  /** The run entities recurring tasks named; their locks are noted in `locks` after each operation, as the model's entities' are. */
  runEntities: Set<string>;
  /** The operation `quiet()` began at (its ticks come after). */
  quietOp: number;
  /** Calls begun (the next `serial`). */
  serials: number;
}

export function emptyRecurring(): RecurringSeen {
  return { ticks: [], controls: [], runNows: [], views: [], finalStates: new Map(), runEntities: new Set(), quietOp: Number.POSITIVE_INFINITY, serials: 0 };
}
