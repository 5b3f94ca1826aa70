/**
 * Every failure an attempt meets, classified once (docs/design.md, section 12): what kind it is, and what
 * the attempt does about it. The stores turn transport codes into the typed errors of
 * `errors.ts`; everything above reacts to the class this module gives, never to a message.
 *
 * | class | errors | what an attempt does |
 * | --- | --- | --- |
 * | `transient` | `StoreUnavailableError`, `ContentionError` (past its retries) | a step's last write is retried under the live lease within `finishBudget`; otherwise 503, nothing changed |
 * | `rejected` | `StoreRejectedError` | a step's last write after the handler ran: its entity changes are discarded and the step fails for good, alerted (200); elsewhere 500, nothing changed |
 * | `config` | `StoreConfigError` | 503 and an error log saying what to fix, at most once a minute |
 * | `lost` | `LeaseLostError` | 503: the attempt may no longer write |
 * | `other` | anything else (a bug) | 503, logged |
 */
import { ContentionError, LeaseLostError, StoreConfigError, StoreRejectedError, StoreUnavailableError } from './errors';
import type { Logger } from '../types';

/** The kinds of failure an attempt tells apart. */
export const FaultClass = {
  transient: 'transient',
  rejected: 'rejected',
  config: 'config',
  lost: 'lost',
  other: 'other',
} as const;
export type FaultClass = (typeof FaultClass)[keyof typeof FaultClass];

/** The class of `error` (see the table above). */
export function classify(error: unknown): FaultClass {
  if (error instanceof StoreUnavailableError || error instanceof ContentionError) return FaultClass.transient;
  if (error instanceof StoreRejectedError) return FaultClass.rejected;
  if (error instanceof StoreConfigError) return FaultClass.config;
  if (error instanceof LeaseLostError) return FaultClass.lost;
  return FaultClass.other;
}

/** How often a configuration error is logged at most, ms. */
export const CONFIG_LOG_INTERVAL_MS = 60_000;

/**
 * Logs configuration errors of the store at most once per `intervalMs`: every task meets the same
 * error until an operator fixes the set-up, and one line a minute says it. Lines held back are
 * counted in the next one.
 */
export class ConfigErrorLog {
  private lastAt = Number.NEGATIVE_INFINITY;
  private held = 0;

  constructor(private readonly intervalMs = CONFIG_LOG_INTERVAL_MS) {}

  /** Logs `error` unless a line was logged less than `intervalMs` ago; returns whether it logged. */
  report(logger: Logger, error: StoreConfigError, fields: Record<string, unknown>, now = Date.now()): boolean {
    if (now - this.lastAt < this.intervalMs) {
      this.held++;
      return false;
    }
    const heldBack = this.held;
    this.lastAt = now;
    this.held = 0;
    logger.error(`the store is not set up right; fix it, nothing can run until then: ${error.message}`, {
      ...fields, ...(heldBack > 0 ? { sameErrorsNotLogged: heldBack } : {}),
    });
    return true;
  }
}
