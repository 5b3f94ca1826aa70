/**
 * What the Locker reports as it works, for logs and counters: `locker.on('failed', (e) => …)`.
 */
import type { Key } from '@google-cloud/datastore';
import type { DropReason } from './decision';

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
