/**
 * Retrying a whole transaction when it aborts on contention, with full-jitter exponential backoff
 * (each delay is random between 0 and `min(maxDelayMs, baseDelayMs * 2^retry)`).
 */
import { ContentionError, StoreUnavailableError } from '../errors/errors';
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';

/** How often and how patiently to retry. */
export interface ContentionRetryOptions {
  /** Runs of `fn` in all, the first included. Defaults to 5. */
  attempts?: number;
  /** Cap of the first delay, ms; doubles with each retry. Defaults to 20. */
  baseDelayMs?: number;
  /** Cap of every delay, ms. Defaults to 1000. */
  maxDelayMs?: number;
  /** A random number in [0, 1). Defaults to `Math.random`; tests pass their own. */
  random?: () => number;
  /** Waits `ms`. Defaults to a `setTimeout`; tests pass their own to avoid real sleeps. */
  sleep?: (ms: number) => Promise<void>;
}

/** Every default of {@link ContentionRetryOptions}. */
export const CONTENTION_RETRY_DEFAULTS = Object.freeze({
  /** Runs in all, the first included. */
  attempts: 5,
  /** Cap of the first delay, ms. */
  baseDelayMs: 20,
  /** Cap of every delay, ms. */
  maxDelayMs: 1_000,
});

/** Every option name of {@link ContentionRetryOptions}. */
const OPTION_NAMES: OptionNames<ContentionRetryOptions> = { attempts: true, baseDelayMs: true, maxDelayMs: true, random: true, sleep: true };

const NONE: ContentionRetryOptions = Object.freeze({});

/** Runs a function under the contention retry of options checked once (see {@link contentionRetry}). */
export type ContentionRetry = <T>(fn: () => Promise<T>) => Promise<T>;

/**
 * Runs `fn`, and again after a backoff each time it throws `ContentionError`. Any other error is
 * thrown at once. When every attempt met contention, throws `StoreUnavailableError` with the last
 * `ContentionError` as its cause.
 */
export async function withContentionRetry<T>(fn: () => Promise<T>, options: ContentionRetryOptions = NONE): Promise<T> {
  return contentionRetry(options)(fn);
}

/**
 * `withContentionRetry` with `options` checked once, here, for every later run (the lock part
 * builds one per Locker: its options are used on every step).
 */
export function contentionRetry(options: ContentionRetryOptions = NONE): ContentionRetry {
  rejectUnknownOptions('withContentionRetry', options, OPTION_NAMES);
  return (fn) => retrying(fn, options);
}

async function retrying<T>(fn: () => Promise<T>, options: ContentionRetryOptions): Promise<T> {
  const attempts = options.attempts ?? CONTENTION_RETRY_DEFAULTS.attempts;
  const base = options.baseDelayMs ?? CONTENTION_RETRY_DEFAULTS.baseDelayMs;
  const max = options.maxDelayMs ?? CONTENTION_RETRY_DEFAULTS.maxDelayMs;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? delay;
  if (!Number.isInteger(attempts) || attempts < 1) throw new RangeError('attempts must be an integer of at least 1');
  let last: ContentionError | undefined;
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (attempt > 0) await sleep(Math.floor(random() * Math.min(max, base * 2 ** (attempt - 1))));
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof ContentionError)) throw error;
      last = error;
    }
  }
  throw new StoreUnavailableError(`the transaction met contention ${attempts} times in a row; giving up`, {
    cause: last,
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
