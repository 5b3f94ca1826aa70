/**
 * What the Locker reports as it works, for logs and counters: `locker.on('failed', (e) => …)`.
 */
import type { Key } from '@google-cloud/datastore';
import type { DropReason } from '../rules/decision';

/**
 * Why a task request was answered with a non-2xx status (the `retryLater` event). Cloud Tasks
 * delivers every such task again, and takes 429 and 5xx (an App Engine target: 503) as a sign of
 * overload that slows the whole queue: count these to see what a run cost.
 */
export const AnswerReason = {
  /** Another attempt holds a fresh lease on the step (`lockFailedStatus`, 503 by default). */
  held: 'held',
  /** The Locker is shutting down (`locker.shutdown()`): the task was not taken; 503 without touching the store. */
  draining: 'draining',
  /** The attempt was stopped by `locker.shutdown()` and its lease handed back (see `handedBack`); 503. */
  shutdown: 'shutdown',
  /** The attempt was stopped near `requestTimeout` and its lease handed back; 503. */
  timeLimit: 'time-limit',
  /** The store was unreachable or overloaded; nothing changed; 503. */
  storeUnavailable: 'store-unavailable',
  /** The store is set up wrongly (permissions, database, index); 503 until an operator fixes it. */
  storeConfig: 'store-config',
  /** The store refused the request for good; 500. */
  storeRejected: 'store-rejected',
  /** The attempt lost its lease while it ran; nothing it did after was saved; 503. */
  leaseLost: 'lease-lost',
  /** The handler threw and attempts are left: the lease was released for a retry; 500. */
  handlerFailed: 'handler-failed',
  /** The request is malformed (lock headers, payload, a kind the route does not serve); 400. */
  badRequest: 'bad-request',
  /** The authenticator refused the request (401 or 403). */
  unauthenticated: 'unauthenticated',
  /** The request is not a POST; 405. */
  method: 'method',
  /** An error nobody expected; 500 or 503, logged. */
  internal: 'internal',
} as const;
export type AnswerReason = (typeof AnswerReason)[keyof typeof AnswerReason];

/** Fields every event has. */
export interface StepEvent {
  /** The entity's key. */
  key: Key;
  /** The step's sequence number. */
  seq: number;
  /** The attempt (request) the event is about; empty for kickoffs and sweeps. */
  attempt: string;
}

/** The events a Locker emits, by name. */
export interface LockerEvents {
  /** An attempt took a free lease and runs its handler. */
  acquired: [StepEvent];
  /** An attempt was refused: another attempt holds a fresh lease. */
  refused: [StepEvent & {
    /** The attempt that holds the lease. */
    holder: string;
    /** When the task is asked to come back (`Retry-After`), ms. */
    retryAfterMs: number;
  }];
  /** A task was dropped without running. */
  dropped: [StepEvent & {
    /** Why it was dropped. */
    reason: DropReason;
  }];
  /** An attempt took over a stale lease. */
  overwritten: [StepEvent & {
    /** The attempt whose stale lease was taken over. */
    previous: string;
    /** How long ago that lease was last written, ms. */
    leaseAgeMs: number;
  }];
  /**
   * An attempt lost its lease while it ran: another attempt took it over, or no renewal succeeded
   * for long enough that it can no longer be proven held. Its signal aborted with `LeaseLostError`.
   */
  lost: [StepEvent];
  /** An attempt ran past `leaseTimeout`: its signal aborted with `LeaseTimeoutError` and its lease is no longer renewed. */
  timedOut: [StepEvent & {
    /** The `leaseTimeout` it ran past, ms. */
    leaseTimeoutMs: number;
  }];
  /** A handler threw; the lease was released for a retry. */
  released: [StepEvent & {
    /** Failed attempts of the step so far, as stored in `lock_try`. */
    retries: number;
    /** What the handler threw. */
    error: unknown;
  }];
  /** A step failed for good. */
  failed: [StepEvent & {
    /** Failed attempts of the step so far, as stored in `lock_try`. */
    retries: number;
    /** The last error. */
    error: unknown;
  }];
  /**
   * A stopped attempt handed its lease back (`locker.shutdown()` ran out of time, or the request
   * neared `requestTimeout`) and its task was answered 503. `silent` when the handler stopped on
   * `ctx.signal` (or never ran): the next delivery takes the free lease. Otherwise the handler was
   * still running: the lease was written stale, and the next delivery overwrites it (`overwritten`,
   * a failed attempt counted and an overwrite alert naming this attempt).
   */
  handedBack: [StepEvent & {
    /** Why the attempt was stopped, or (`store-unavailable`) why a fan-out's adding of children gave its lease back. */
    reason: 'shutdown' | 'time-limit' | 'store-unavailable';
    /** Whether the hand-back went without a failed attempt counted and without an alert. */
    silent: boolean;
  }];
  /**
   * A task request on a `handle()` route was answered with a non-2xx status: Cloud Tasks delivers
   * it again later. Every such answer emits it once, with its status and why, so a listener can
   * count them (`refused`, `released` and the others say more about some of them).
   */
  retryLater: [{
    /** The HTTP status answered. */
    status: number;
    /** Why. */
    reason: AnswerReason;
    /** The request's path. */
    path: string;
    /** The entity's key, when the request named a valid one. */
    key?: Key;
    /** The step's sequence number, when the request named a valid one. */
    seq?: number;
  }];
  /** A step finished; `next` is the step it scheduled, if any. */
  completed: [StepEvent & {
    /** The sequence number of the step it scheduled; undefined when the chain is complete. */
    next?: number;
  }];
  /** An operator cancelled the chain at step `seq` (`locker.cancel()`). */
  cancelled: [StepEvent];
  /** An operator retried failed step `seq` with a fresh retry budget, on a new task (`locker.retry()`). */
  retried: [StepEvent & {
    /** The new task's name. */
    task: string;
  }];
  /** A step was committed with its ledger record (a kickoff, or a handler chaining). */
  scheduled: [StepEvent & {
    /** The task's name. */
    task: string;
    /** The handler path the task is sent to. */
    path: string;
  }];
  /** A step was re-delivered on a new task: by the sweep (it stalled) or by `locker.resend()`. */
  resent: [StepEvent & {
    /** The new task's name. */
    task: string;
    /** The handler path the task is sent to. */
    path: string;
    /** Which send of the step this is: 2 for the first re-delivery. */
    send: number;
  }];
}
