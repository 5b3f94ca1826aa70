/**
 * A schedule's times: its cron expression read by `croner` in its IANA time zone. Only absolute
 * instants leave this file; wall-clock rules (DST) are croner's, as documented in
 * `docs/guides/recurring.md` and held by `test/recurring/cron-times.test.ts`:
 * - spring forward: a time inside the skipped hour (02:30 in Europe/Berlin on the last Sunday of
 *   March) runs once, at the first valid time after the gap (03:00);
 * - fall back: a fixed time inside the repeated hour runs once, at its first pass; an expression
 *   with a wildcard or step in the hour field (`*\/15 * * * *`) runs in both passes.
 */
import { Cron } from 'croner';

/** Steps back from `now` tried, widest last, when looking for the latest time at or before it. */
const WINDOWS_MS = [60_000, 3_600_000, 86_400_000, 32 * 86_400_000, 367 * 86_400_000, 5 * 367 * 86_400_000] as const;
/** Times listed at most by `timesBetween` (a missed-tick list is bounded whatever the outage). */
export const MAX_LISTED_TIMES = 1_000;
/** Times walked at most by `timesBetween`. */
const MAX_WALK = 100_000;

/** A compiled expression in its zone. */
export interface CronTimes {
  /** The expression as given. */
  readonly expression: string;
  /** The IANA zone. */
  readonly timeZone: string;
  /** The first time strictly after `after`; undefined when there is none (an expression that never matches again). */
  next(after: Date): Date | undefined;
  /** The latest time in (`floor`, `now`]; undefined when there is none. */
  latestUpTo(now: Date, floor: Date): Date | undefined;
  /** The times in (`floor`, `now`], oldest first, at most `max` (the newest are kept when there are more). */
  timesBetween(floor: Date, now: Date, max?: number): Date[];
}

/**
 * Compiles `expression` (five fields: minute, hour, day of month, month, day of week; or a
 * nickname such as `@daily`) in `timeZone`; a `RangeError` naming what is wrong when either is invalid.
 */
export function cronTimes(expression: string, timeZone: string): CronTimes {
  if (typeof expression !== 'string' || expression.trim() === '') throw new RangeError(`a schedule needs a cron expression; got ${JSON.stringify(expression)}`);
  checkZone(timeZone);
  let cron: Cron;
  try {
    cron = new Cron(expression, { timezone: timeZone, paused: true, mode: '5-part' });
  } catch (error) {
    throw new RangeError(`the cron expression ${JSON.stringify(expression)} is not valid: ${error instanceof Error ? error.message : String(error)}`);
  }
  const next = (after: Date): Date | undefined => cron.nextRun(after) ?? undefined;
  const latestUpTo = (now: Date, floor: Date): Date | undefined => {
    for (const window of WINDOWS_MS) {
      const start = new Date(Math.max(floor.getTime(), now.getTime() - window));
      let found = next(start);
      if (!found || found > now) {
        if (start.getTime() === floor.getTime()) return undefined;
        continue;
      }
      for (let later = next(found); later && later <= now; later = next(later)) found = later;
      return found;
    }
    // Wider than five years: walk from the floor (an expression that matches rarely).
    let found: Date | undefined;
    for (let t = next(floor); t && t <= now; t = next(t)) found = t;
    return found;
  };
  const timesBetween = (floor: Date, now: Date, max = MAX_LISTED_TIMES): Date[] => {
    // Walks from no earlier than needed: the newest `max` times lie after the floor a caller gives
    // (a grace window), and the walk is bounded whatever the outage.
    const out: Date[] = [];
    let steps = 0;
    for (let t = next(floor); t && t <= now && steps < MAX_WALK; t = next(t), steps++) out.push(t);
    return out.length > max ? out.slice(out.length - max) : out;
  };
  return { expression, timeZone, next, latestUpTo, timesBetween };
}

/** Throws a `RangeError` unless `timeZone` is an IANA zone this runtime knows. */
export function checkZone(timeZone: string): void {
  if (typeof timeZone !== 'string' || timeZone === '') throw new RangeError(`a schedule's time zone must be an IANA zone name such as "Europe/Berlin"; got ${JSON.stringify(timeZone)}`);
  try {
    new Intl.DateTimeFormat('en-US', { timeZone }).format(0);
  } catch {
    throw new RangeError(`the time zone ${JSON.stringify(timeZone)} is not an IANA zone this runtime knows (e.g. "Europe/Berlin", "UTC")`);
  }
}
