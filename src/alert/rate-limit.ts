/**
 * A per-process rate limit for alerts: at most `max` in any `perMs` span (a sliding window),
 * computed from an injected clock, with no timers. What it holds back is counted, and the next
 * alert let through is told how many were held back since the last one.
 */
import { ConfigError } from '../errors/errors';
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';

/** How many alerts may go out, and in what span. */
export interface RateLimitOptions {
  /** Alerts allowed per window: a positive integer. */
  max: number;
  /** The window, in milliseconds: a positive number. */
  perMs: number;
}

/** Every option name of {@link RateLimitOptions}. */
const OPTION_NAMES: OptionNames<RateLimitOptions> = { max: true, perMs: true };

/** The limiter's answer to one alert. */
export type RateDecision =
  /** Send it; `suppressed` alerts were held back since the last one sent (the count is now reset). */
  | { allowed: true; suppressed: number }
  /** Hold it back; it is counted, and `suppressed` is the count so far. */
  | { allowed: false; suppressed: number };

/** A sliding-window counter: at most `max` grants in any span of `perMs` milliseconds. */
export class RateLimiter {
  readonly max: number;
  readonly perMs: number;
  private readonly clock: () => number;
  /** Times of the grants still inside the window, oldest first (never more than `max`). */
  private readonly granted: number[] = [];
  private suppressed = 0;

  /** @throws ConfigError when `max` or `perMs` is not a positive number (`max` an integer). */
  constructor(options: RateLimitOptions, clock: () => number = Date.now) {
    assertLimit(options);
    if (typeof clock !== 'function') {
      throw new ConfigError('rate limit `clock` must be a function returning epoch milliseconds.');
    }
    this.max = options.max;
    this.perMs = options.perMs;
    this.clock = clock;
  }

  /** Asks to send one alert now. */
  take(): RateDecision {
    const now = this.clock();
    this.forgetBefore(now - this.perMs);
    if (this.granted.length >= this.max) {
      this.suppressed += 1;
      return { allowed: false, suppressed: this.suppressed };
    }
    this.granted.push(now);
    const suppressed = this.suppressed;
    this.suppressed = 0;
    return { allowed: true, suppressed };
  }

  /**
   * Gives back a count that a granted alert was to report but could not (its send failed), so the
   * next alert sent reports it instead.
   */
  restore(suppressed: number): void {
    if (suppressed > 0) this.suppressed += suppressed;
  }

  /** Alerts held back since the last one let through. */
  get pending(): number {
    return this.suppressed;
  }

  /** Drops grants at or before `limit`: they left the window. */
  private forgetBefore(limit: number): void {
    while (this.granted.length > 0 && this.granted[0] <= limit) this.granted.shift();
  }
}

function assertLimit(options: RateLimitOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError(`rate limit must be an object { max, perMs }, got ${describe(options)}.`);
  }
  rejectUnknownOptions('rate limit', options, OPTION_NAMES);
  const { max, perMs } = options;
  if (!Number.isSafeInteger(max) || max < 1) {
    throw new ConfigError(`rate limit \`max\` must be a positive integer (alerts per window), got ${describe(max)}.`);
  }
  if (typeof perMs !== 'number' || !Number.isFinite(perMs) || perMs <= 0) {
    throw new ConfigError(`rate limit \`perMs\` must be a positive number of milliseconds, got ${describe(perMs)}.`);
  }
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
