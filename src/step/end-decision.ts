/**
 * How an attempt ends, decided in one pure function from what the attempt knows once its handler
 * returned or threw (docs/design.md, section 18, and docs/concepts/life-of-a-step.md): the decision
 * is returned, and `attempt.ts` carries it out in one switch. Nothing else decides it, so each row
 * is testable without a store (`test/step/end-decision.test.ts`).
 *
 * - `finished`: the handler's own `schedule()`, `complete()` or `fanOut()` finished the step (an
 *   error it threw afterwards is logged; the step stays finished).
 * - `finish`: the handler returned without finishing the step: the step, and the chain, complete.
 * - `fail`: the handler threw: the lease is released for a retry (500), or the step fails for good.
 * - `handBack`: the attempt was stopped (shutdown, the request's time limit), or the store failed
 *   while `ctx.fanOut()` added children (which a retry resumes): the lease is handed back (503);
 *   written stale (`ranOn`) when what the handler did after the stop may have had its effect.
 * - `lost`: the lease was lost: nothing the attempt did after that was saved.
 * - `unstorable`: the handler ran, but the store refused its finishing write for good: the step
 *   fails for good, alerted, rather than run again unalerted.
 * - `unsure`: a finishing write gave up on a store fault (it may have landed), or the store's
 *   set-up is wrong: the error goes out, answered 503 with the lease held (a later delivery takes
 *   the stale lease over, alerted).
 */
import { LeaseLostError, ShutdownError } from '../errors/errors';
import { classify, FaultClass } from '../errors/faults';
import type { Interruption } from './lease';

/** Why a lease is handed back: the attempt was stopped, or the store failed while it fanned out. */
export type HandBackWhy = Interruption | 'store-unavailable';

/** The end of an attempt, as decided. */
export type AttemptEnd =
  | { end: 'finished'; next: number | undefined; threw?: unknown }
  | { end: 'finish' }
  | { end: 'fail'; error: unknown; nearTimeout: boolean }
  | { end: 'handBack'; ranOn: boolean; why: HandBackWhy; rejected?: unknown }
  | { end: 'lost'; error: LeaseLostError }
  | { end: 'unstorable'; error: unknown }
  | { end: 'unsure'; error: unknown };

/** What an attempt knows when its handler is done (or given up on). */
export interface AttemptFacts {
  /** The handler was still running at the end of its grace after a stop. */
  ranOn: boolean;
  /** The stop (shutdown, the request's time limit), if any. */
  interruption: Interruption | undefined;
  /** Whether the handler's own finishing call finished the step, and its next step. */
  finished: boolean;
  next: number | undefined;
  /** What the handler threw, if it threw. */
  failure: { error: unknown } | undefined;
  /** The error a finishing write (`schedule()`, `complete()`, the seal of `fanOut()`) gave up with. */
  settleError?: unknown;
  /** The error that stopped `fanOut()` before its seal (its source, a child, the store adding children). */
  fanOutError?: unknown;
  /** The lease lost, if it was. */
  lost: LeaseLostError | undefined;
}

/** Decides how the attempt ends; see the file's comment. */
export function decideEnd(f: AttemptFacts): AttemptEnd {
  // Stopped, and still running at the end of its grace: whatever it does next is not written.
  if (f.ranOn && f.interruption && !f.finished) return { end: 'handBack', ranOn: true, why: f.interruption };
  if (f.finished) return f.failure ? { end: 'finished', next: f.next, threw: f.failure.error } : { end: 'finished', next: f.next };
  const lost = f.lost ?? (f.failure?.error instanceof LeaseLostError ? f.failure.error : undefined);
  if (lost) return { end: 'lost', error: lost };
  if (!f.failure) return { end: 'finish' };
  const { error } = f.failure;
  if (f.interruption) {
    // It said it stopped (it rejected with the signal's reason, or called ctx.handBack()): at
    // shutdown, handed back silently; for the request's time limit, a failed attempt, counted.
    if (error === f.interruption) {
      return f.interruption instanceof ShutdownError ? { end: 'handBack', ranOn: false, why: f.interruption } : { end: 'fail', error, nearTimeout: true };
    }
    // Any other rejection after the stop may come after its effect: written stale, the next run alerted.
    return { end: 'handBack', ranOn: true, why: f.interruption, rejected: error };
  }
  const fault = classify(error);
  if (fault === FaultClass.config) return { end: 'unsure', error };
  if (error === f.settleError) return fault === FaultClass.transient ? { end: 'unsure', error } : { end: 'unstorable', error };
  // The store failed while fanOut() added children (the header, a page, a kickoff): nothing it wrote
  // is lost and the next attempt resumes where it stopped. The handler's code before fanOut() ran,
  // and its effect may be there, so the lease goes back written stale: the next delivery takes it
  // over with an overwrite alert naming this attempt, as after any run that may have had its effect.
  if (error === f.fanOutError && fault === FaultClass.transient) return { end: 'handBack', ranOn: true, why: 'store-unavailable' };
  return { end: 'fail', error, nearTimeout: false };
}

/**
 * How an attempt ends when the step's finishing write after the handler returned (`finish`) threw
 * once its retries under the lease were spent: `lost` (the lease was lost), `unsure` (a store fault:
 * it may have landed; or the store's set-up is wrong), or `unstorable` (refused for good: an entity
 * over the store's limit, a value it cannot hold, a `toProperties()` that throws).
 */
export function decideAfterFinish(error: unknown): Extract<AttemptEnd, { end: 'lost' | 'unsure' | 'unstorable' }> {
  if (error instanceof LeaseLostError) return { end: 'lost', error };
  const fault = classify(error);
  return fault === FaultClass.transient || fault === FaultClass.config ? { end: 'unsure', error } : { end: 'unstorable', error };
}
