/**
 * The clock and timer functions a part runs on: `performance.now()`, `setTimeout` and
 * `clearTimeout` in production ({@link realTimers}); a test hands a part its own, to drive its
 * timed rules (a lease's renewals, its proof window and grace, the ledger's grouped removals)
 * without waiting.
 */

/** A timer as {@link Timers.setTimeout} made it: it can be told not to keep the process alive. */
export interface Timer {
  /** Lets the process exit while the timer is pending. */
  unref(): unknown;
}

/** A monotonic clock and one-shot timers. */
export interface Timers {
  /** Milliseconds on a monotonic clock (`performance.now()`). */
  now(): number;
  /** Calls `fn` once, `ms` milliseconds from now. */
  setTimeout(fn: () => void, ms: number): Timer;
  /** Cancels a timer `setTimeout` made (nothing when it already fired, or is undefined). */
  clearTimeout(timer: Timer | undefined): void;
}

/** The process's own clock and timers. */
export const realTimers: Timers = Object.freeze({
  now: () => performance.now(),
  setTimeout: (fn: () => void, ms: number): Timer => setTimeout(fn, ms),
  clearTimeout: (timer: Timer | undefined): void => clearTimeout(timer as NodeJS.Timeout | undefined),
});
