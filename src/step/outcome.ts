/**
 * What came of an attempt at a step, as the step code names it (`outcomes.done(…)`,
 * `outcomes.leaseLost()`). The step code never speaks HTTP: `http/answer.ts` maps each outcome to
 * a status, a message and a `Retry-After`.
 */

/** Why a lease was handed back: shutdown, the request's time limit, or the store failed while the step added fan-out children. */
export type HandBackReason = 'shutdown' | 'time-limit' | 'store-unavailable';

/** What came of an attempt. */
export type Outcome =
  | { kind: 'done'; seq: number; next?: number }
  | { kind: 'refused'; seq: number; lockFailedStatus: number; retryAfter: number }
  | { kind: 'dropped'; why: string }
  | { kind: 'expired'; seq: number }
  | { kind: 'released'; seq: number; tries: number; maxRetries: number; nearTimeout?: boolean }
  | { kind: 'failed'; seq: number; tries: number }
  | { kind: 'handed-back'; seq: number; reason: HandBackReason }
  | { kind: 'lease-lost' }
  | { kind: 'store-unavailable' }
  | { kind: 'store-config' }
  | { kind: 'store-rejected' }
  | { kind: 'internal' }
  | { kind: 'bad-request'; message: string };

/** The outcomes an attempt names. */
export const outcomes = {
  /** The step finished: the chain completes, or goes on at step `next`. */
  done: (seq: number, next?: number): Outcome => (next === undefined ? { kind: 'done', seq } : { kind: 'done', seq, next }),
  /** Another attempt holds a fresh lease: answered with the Locker's `lockFailedStatus`, after `retryAfter` s. */
  refused: (seq: number, lockFailedStatus: number, retryAfter: number): Outcome => ({ kind: 'refused', seq, lockFailedStatus, retryAfter }),
  /** The task is not run and never will be: a duplicate, a stale chain's, an entity gone. */
  dropped: (why: string): Outcome => ({ kind: 'dropped', why }),
  /** The step's lease expired once too often: failed for good on arrival. */
  expired: (seq: number): Outcome => ({ kind: 'expired', seq }),
  /** The handler failed and the lease was released for a retry. */
  released: (seq: number, tries: number, maxRetries: number): Outcome => ({ kind: 'released', seq, tries, maxRetries }),
  /** A released attempt that was stopped near the request's timeout: retried soon. */
  stoppedNearTimeout: (released: Extract<Outcome, { kind: 'released' }>): Outcome => ({ ...released, nearTimeout: true }),
  /** The step failed for good. */
  failed: (seq: number, tries: number): Outcome => ({ kind: 'failed', seq, tries }),
  /** The lease was handed back (shutdown, the request's time limit, or the store failed while the step added fan-out children). */
  handedBack: (seq: number, reason: HandBackReason): Outcome => ({ kind: 'handed-back', seq, reason }),
  /** The attempt lost its lease: nothing it did after that was saved. */
  leaseLost: (): Outcome => ({ kind: 'lease-lost' }),
  /** The store failed transiently: nothing moved on. */
  storeUnavailable: (): Outcome => ({ kind: 'store-unavailable' }),
  /** The store's set-up is wrong (an index, a permission). */
  storeConfig: (): Outcome => ({ kind: 'store-config' }),
  /** The store refused the request for good. */
  storeRejected: (): Outcome => ({ kind: 'store-rejected' }),
  /** A bug: nothing moved on. */
  internal: (): Outcome => ({ kind: 'internal' }),
  /** The task request does not match its step. */
  badRequest: (message: string): Outcome => ({ kind: 'bad-request', message }),
};

/** Whether the task ended with its step's chain possibly ended (done, expired, failed for good): a fan-out child then settles. */
export function endedStep(o: Outcome): boolean {
  return o.kind === 'done' || o.kind === 'expired' || o.kind === 'failed';
}

/** The take span's outcome: why the task did not run, when it was answered before the handler. */
export function takeOutcome(o: Outcome): 'refused' | 'dropped' | 'expired' | 'answered' {
  return o.kind === 'refused' || o.kind === 'dropped' || o.kind === 'expired' ? o.kind : 'answered';
}
