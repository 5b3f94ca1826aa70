/**
 * How a task request is answered: the one place that maps an outcome of a step to an HTTP status,
 * a message and a `Retry-After` (docs/design.md, section 15). The step code names the outcome
 * (`step/outcome.ts`); `answerTo` maps it here, and the middleware sends what it gives.
 *
 * Only 2xx ends a task: everything Cloud Tasks should deliver again is 5xx (503 with
 * `Retry-After` for "not now", 500 for a failed attempt, which the queue's backoff spaces out).
 */
import type { AnswerReason } from '../events/events';
import type { HandBackReason, Outcome } from '../step/outcome';

/** What a hand-back's answer says of why. */
const HAND_BACK_WHY: Record<HandBackReason, string> = {
  shutdown: 'the instance is shutting down',
  'time-limit': 'the request neared its timeout',
  'store-unavailable': 'the store failed while it added fan-out children',
};

/** How a task request is answered. */
export interface Answer {
  status: number;
  message: string;
  /** Seconds, for a `Retry-After` header. */
  retryAfter?: number;
  /** Why the task did not run, when it was answered before the handler (the take span's outcome). */
  outcome?: 'refused' | 'dropped' | 'expired';
  /** Why a non-2xx answer was given (the `retryLater` event). */
  reason?: AnswerReason;
}

/** The answers a step's outcome gets. */
export const answers = {
  /** The step finished: the chain completes, or goes on at step `next`. */
  done(seq: number, next?: number): Answer {
    return { status: 200, message: next ? `step ${seq} done; step ${next} scheduled` : `step ${seq} done; chain complete` };
  },
  /** Another attempt holds a fresh lease: the Locker's `lockFailedStatus`, after the lease's own time. */
  refused(seq: number, status: number, retryAfter: number): Answer {
    return { status, message: `step ${seq} is running in another attempt; retry later`, retryAfter, outcome: 'refused', reason: 'held' };
  },
  /** The task is not run and never will be: a duplicate, a stale chain's, an entity gone. */
  dropped(why: string): Answer {
    return { status: 200, message: `dropped: ${why}`, outcome: 'dropped' };
  },
  /** The step's lease expired once too often: failed for good on arrival. */
  expired(seq: number): Answer {
    return { status: 200, message: `step ${seq} failed: its lease expired with no attempts left`, outcome: 'expired' };
  },
  /** The handler failed and the lease was released: Cloud Tasks retries with the queue's backoff. */
  released(seq: number, tries: number, maxRetries: number): Answer {
    return { status: 500, message: `step ${seq} failed (attempt ${tries} of ${maxRetries}); retry`, reason: 'handler-failed' };
  },
  /** A released attempt that was stopped near the request's timeout: retried soon. */
  stoppedNearTimeout(released: Answer): Answer {
    return { status: 503, message: `${released.message} (stopped near the request timeout)`, retryAfter: 1, reason: 'time-limit' };
  },
  /** The step failed for good: the task ends (the alert and the ledger record tell the rest). */
  failed(seq: number, tries: number): Answer {
    return { status: 200, message: `step ${seq} failed for good after ${tries} attempt(s)` };
  },
  /** The lease was handed back (shutdown, or the request's time limit): delivered again soon. */
  handedBack(seq: number, reason: HandBackReason): Answer {
    return { status: 503, message: `step ${seq} handed back (${HAND_BACK_WHY[reason]}); retry`, retryAfter: 1, reason };
  },
  /** The attempt lost its lease: nothing it did after that was saved. */
  leaseLost(): Answer {
    return { status: 503, message: 'lease lost', retryAfter: 1, reason: 'lease-lost' };
  },
  /** The store failed transiently: nothing moved on. */
  storeUnavailable(): Answer {
    return { status: 503, message: 'store unavailable; retry', retryAfter: 1, reason: 'store-unavailable' };
  },
  /** The store's set-up is wrong (an index, a permission): retried a minute later. */
  storeConfig(): Answer {
    return { status: 503, message: 'the store is not set up right; retry once it is', retryAfter: 60, reason: 'store-config' };
  },
  /** The store refused the request for good. */
  storeRejected(): Answer {
    return { status: 500, message: 'the store refused the request; retry', reason: 'store-rejected' };
  },
  /** A bug: nothing moved on. */
  internal(): Answer {
    return { status: 503, message: 'internal error; retry', retryAfter: 1, reason: 'internal' };
  },
  /** A request the middleware could not answer otherwise (a bug before the attempt). */
  requestFailed(): Answer {
    return { status: 500, message: 'internal error', reason: 'internal' };
  },
  /** The Locker is shutting down: not taken, the store untouched; delivered again elsewhere. */
  draining(): Answer {
    return { status: 503, message: 'shutting down; retry', retryAfter: 1, reason: 'draining' };
  },
  /** The request's method is not the route's. */
  wrongMethod(message: string, reason?: 'method'): Answer {
    return reason ? { status: 405, message, reason } : { status: 405, message };
  },
  /** The authenticator refused the request (its own status, 401 or 403), or failed (401). */
  unauthenticated(status = 401): Answer {
    return { status, message: status === 401 ? 'unauthenticated' : 'forbidden', reason: 'unauthenticated' };
  },
  /** The task request is malformed (its headers or its payload). */
  badRequest(message: string): Answer {
    return { status: 400, message, reason: 'bad-request' };
  },
  /** The sweep route's sweep failed. */
  sweepFailed(): Answer {
    return { status: 503, message: 'sweep failed; retry', retryAfter: 1 };
  },
  /** The sweep route was called within its `minIntervalMs` of the last sweep's start: nothing was done. */
  sweepTooEarly(retryInMs: number): Answer {
    const retryAfter = Math.max(1, Math.ceil(retryInMs / 1000));
    return { status: 429, message: `a sweep ran less than its minimum interval ago; nothing was done; the next may start in ${retryAfter} s`, retryAfter };
  },
};

/** The answer to what came of an attempt (`step/outcome.ts`). */
export function answerTo(o: Outcome): Answer {
  switch (o.kind) {
    case 'done': return answers.done(o.seq, o.next);
    case 'refused': return answers.refused(o.seq, o.lockFailedStatus, o.retryAfter);
    case 'dropped': return answers.dropped(o.why);
    case 'expired': return answers.expired(o.seq);
    case 'released': {
      const released = answers.released(o.seq, o.tries, o.maxRetries);
      return o.nearTimeout ? answers.stoppedNearTimeout(released) : released;
    }
    case 'failed': return answers.failed(o.seq, o.tries);
    case 'handed-back': return answers.handedBack(o.seq, o.reason);
    case 'lease-lost': return answers.leaseLost();
    case 'store-unavailable': return answers.storeUnavailable();
    case 'store-config': return answers.storeConfig();
    case 'store-rejected': return answers.storeRejected();
    case 'internal': return answers.internal();
    case 'bad-request': return answers.badRequest(o.message);
  }
}
