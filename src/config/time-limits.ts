/**
 * The three clocks a step runs under, and the rule between them (docs/concepts/shutdown-and-time-limits.md):
 * the platform's request timeout (`requestTimeout`), the queue's dispatch deadline, and
 * `leaseTimeout`. A step is stopped a margin before the platform would cut its request, so its
 * lease is handed back and its task answered while the request is still open.
 */
import { ConfigError } from '../errors/errors';
import type { Logger } from '../types';

/** Cloud Run's default request timeout (5 min), the default of `requestTimeout`, ms. */
export const DEFAULT_REQUEST_TIMEOUT = 300_000;
/** Cloud Tasks' default dispatch deadline (10 min), ms. */
export const DEFAULT_DISPATCH_DEADLINE = 600_000;
/** The shortest `requestTimeout` that leaves room for a handler and a margin, ms. */
export const MIN_REQUEST_TIMEOUT = 2_000;

/** What the library derives from `requestTimeout`. */
export interface StepTimes {
  /** When a running handler's signal aborts with `RequestTimeoutError`, ms after its lease was taken. */
  stepLimit: number;
  /** How long a stopped handler has to return before its lease is given up (then half the margin is left for the write and the answer), ms. */
  stepGrace: number;
}

/**
 * The margin before the platform's cut: a tenth of `requestTimeout`, at least 1 s and at most 30 s.
 * The handler is stopped at `requestTimeout − margin`; it has half the margin to return.
 */
export function stepTimes(requestTimeout: number): StepTimes {
  const margin = Math.min(30_000, Math.max(1_000, Math.round(requestTimeout / 10)));
  return { stepLimit: requestTimeout - margin, stepGrace: Math.floor(margin / 2) };
}

/**
 * Checks the three clocks: throws `ConfigError` when `requestTimeout` leaves no room for a step
 * (less than 2 s: most likely seconds were given), and logs one warning naming the three numbers
 * when they merely waste. The one rule for the dispatch deadline: at least `requestTimeout`, since
 * a step stopped at its limit is answered within the margin after it, up to `requestTimeout`; a
 * queue that stops waiting sooner delivers the task again (refused) while the step still runs, and
 * loses its answer. A longer deadline costs nothing (the platform cuts the request at
 * `requestTimeout`), and `leaseTimeout` does not bound it. The other waste: `leaseTimeout` (given)
 * ends renewal before the step's limit (a step running past it is taken over, alerted, while still
 * running).
 */
export function checkTimeLimits(
  t: { requestTimeout: number; leaseTimeout: number; leaseTimeoutGiven: boolean; dispatchDeadline: number | undefined },
  logger: Logger,
): void {
  if (t.requestTimeout < MIN_REQUEST_TIMEOUT) {
    throw new ConfigError(
      `requestTimeout (${t.requestTimeout} ms) leaves no room for a step and a margin: it is in milliseconds ` +
        `(Cloud Run's --timeout=300 is 300000), at least ${MIN_REQUEST_TIMEOUT}.`,
    );
  }
  const { stepLimit } = stepTimes(t.requestTimeout);
  const numbers = `requestTimeout ${t.requestTimeout} ms, dispatch deadline ${t.dispatchDeadline === undefined ? 'unknown' : `${t.dispatchDeadline} ms`}, leaseTimeout ${t.leaseTimeout} ms`;
  const waste: string[] = [];
  if (t.dispatchDeadline !== undefined && t.dispatchDeadline < t.requestTimeout) {
    waste.push(`the queue stops waiting at ${t.dispatchDeadline} ms while a step may run until ${stepLimit} ms and be answered until ${t.requestTimeout} ms: a longer step's task is delivered again (and refused) while it runs, and its answer is lost; set the dispatch deadline to requestTimeout or more`);
  }
  if (t.leaseTimeoutGiven && t.leaseTimeout < stepLimit) {
    waste.push(`leaseTimeout ends renewal at ${t.leaseTimeout} ms, before the step's limit of ${stepLimit} ms: a longer step is taken over (alerted) while it still runs; set leaseTimeout to requestTimeout or more`);
  }
  if (waste.length > 0) logger.warn(`time limits disagree (${numbers}): ${waste.join('; ')}`, { requestTimeout: t.requestTimeout, dispatchDeadline: t.dispatchDeadline, leaseTimeout: t.leaseTimeout });
}
