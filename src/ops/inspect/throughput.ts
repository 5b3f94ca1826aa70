/**
 * Steps finished per minute, with the p50 and p95 of how long their last attempt took, drawn from
 * the chains' histories (`lock_hist`) already stored: pure, so the buckets and percentiles are
 * tested against a hand-built history. The inspector reads the entities (`inspector.throughput()`,
 * a bounded query per kind, namespace and state); this turns their histories into buckets.
 */
import { readHistory } from '../../rules/step-history';

/** A minute of the picture. */
export interface ThroughputBucket {
  /** The minute's start. */
  at: Date;
  /** Steps that ended in it (every outcome but `running`). */
  finished: number;
  /** Of those, steps that failed for good. */
  failed: number;
  /** The median of how long their last attempt took, ms (nearest rank); undefined with no step timed. */
  p50Ms?: number;
  /** The 95th percentile, ms (nearest rank). */
  p95Ms?: number;
}

/** What `inspector.throughput()` returns. */
export interface Throughput {
  /** The window's start: a whole minute. */
  since: Date;
  /** The window's end: when it was read. */
  now: Date;
  /** One bucket per minute from `since`, oldest first. */
  buckets: ThroughputBucket[];
  /** Steps counted in all. */
  finished: number;
  /** The p50 of how long they took over the whole window, ms (nearest rank); undefined with none. */
  p50Ms?: number;
  /** The p95, likewise. */
  p95Ms?: number;
  /** The entities read. */
  entities: number;
  /** The most read per kind, namespace and state. */
  cap: number;
  /**
   * What may be missing: `entities` when a query hit the cap (more entities moved in the window
   * than were read), `history` when an entity's kept history began inside the window (it finished
   * more steps than the lock keeps). Empty when the picture is whole.
   */
  cut: Array<'entities' | 'history'>;
}

/** A minute, ms. */
export const MINUTE_MS = 60_000;

/** One ended step: when it ended and how long its last attempt took. */
export interface EndedStep {
  endedAt: number;
  tookMs: number;
  failed: boolean;
}

/**
 * The ended steps of a stored history that ended in [`since`, `now`]. A step's end is its last
 * attempt's start plus how long it took (the write that ended it); entries without a start (a step
 * cancelled before it ran) have no time and are left out. `full` says the history began inside the
 * window with every entry kept (`HISTORY_STEPS`): older steps of the window were cut from it.
 */
export function endedSteps(hist: string, since: number, now: number, keep: number): { steps: EndedStep[]; full: boolean } {
  const entries = readHistory(hist);
  const steps: EndedStep[] = [];
  let oldestEnd: number | undefined;
  for (const e of entries) {
    if (e.outcome === 'running' || !e.startedAt || e.tookMs === undefined) continue;
    const endedAt = e.startedAt.getTime() + e.tookMs;
    oldestEnd = endedAt;
    if (endedAt >= since && endedAt <= now) steps.push({ endedAt, tookMs: e.tookMs, failed: e.outcome === 'failed' });
  }
  return { steps, full: entries.length >= keep && oldestEnd !== undefined && oldestEnd >= since };
}

/** The buckets of `steps`, one per minute from `since` (a whole minute) to `now`. */
export function bucketsOf(steps: readonly EndedStep[], since: number, now: number): ThroughputBucket[] {
  const count = Math.max(1, Math.ceil((now - since) / MINUTE_MS));
  const times: number[][] = Array.from({ length: count }, () => []);
  const failed = new Array<number>(count).fill(0);
  for (const s of steps) {
    const i = Math.floor((s.endedAt - since) / MINUTE_MS);
    if (i < 0 || i >= count) continue;
    times[i]!.push(s.tookMs);
    if (s.failed) failed[i]!++;
  }
  return times.map((t, i) => {
    const bucket: ThroughputBucket = { at: new Date(since + i * MINUTE_MS), finished: t.length, failed: failed[i]! };
    if (t.length > 0) {
      t.sort((a, b) => a - b);
      bucket.p50Ms = percentile(t, 50);
      bucket.p95Ms = percentile(t, 95);
    }
    return bucket;
  });
}

/** The window's p50 and p95 over every step, ms: `{}` with none. */
export function overall(steps: readonly EndedStep[]): { p50Ms?: number; p95Ms?: number } {
  if (steps.length === 0) return {};
  const sorted = steps.map((s) => s.tookMs).sort((a, b) => a - b);
  return { p50Ms: percentile(sorted, 50), p95Ms: percentile(sorted, 95) };
}

/** The nearest-rank percentile `p` (1 to 100) of `sorted` (ascending, not empty). */
export function percentile(sorted: readonly number[], p: number): number {
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** The start of the minute `t` is in. */
export function minuteOf(t: number): number {
  return Math.floor(t / MINUTE_MS) * MINUTE_MS;
}
