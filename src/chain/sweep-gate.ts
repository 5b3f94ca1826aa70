/**
 * What keeps the sweep route cheap to call: sweeps in one process never run side by side (a call
 * that comes while one runs gets that sweep's result, not a second sweep), and the route starts a
 * new one only once `minIntervalMs` has passed since the last one started (an earlier call is
 * answered 429 with `Retry-After`, and nothing is read). Each sweep reads a query per namespace and
 * up to `limit` records, so a caller that can reach the route (a task credential, a cross-site form
 * on an unauthenticated route) could otherwise make the store do that work as often as it likes.
 * Instances do not share the gate: each sweeps at most once per interval, and sweeps are safe to
 * run side by side across instances (every change is a compare-and-swap, see `sweep.ts`).
 */
import type { SweepResult } from './sweep';

/** The sweep route's default `minIntervalMs`: a sixth of Cloud Scheduler's shortest period (1 min). */
export const DEFAULT_SWEEP_MIN_INTERVAL = 10_000;

/** A call the gate did not start a sweep for: one started too recently. */
export interface TooEarly {
  /** How long until a new sweep may start, ms. */
  retryInMs: number;
}

/** Single-flight and a minimum interval for one Locker's sweeps. */
export class SweepGate {
  private running: Promise<SweepResult> | undefined;
  private startedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly clock: () => number) {}

  /** Joins the sweep in flight, or starts one (the timer's and `locker.sweep()`'s callers: no interval). */
  run(sweep: () => Promise<SweepResult>): Promise<SweepResult> {
    if (this.running) return this.running;
    this.startedAt = this.clock();
    const running = sweep().finally(() => { if (this.running === running) this.running = undefined; });
    this.running = running;
    return running;
  }

  /** As `run`, but refuses to start a sweep within `minIntervalMs` of the last one's start. */
  runIfDue(minIntervalMs: number, sweep: () => Promise<SweepResult>): Promise<SweepResult> | TooEarly {
    if (this.running) return this.running;
    const since = this.clock() - this.startedAt;
    if (since < minIntervalMs) return { retryInMs: minIntervalMs - since };
    return this.run(sweep);
  }
}
