/**
 * What the Locker reports as it works, for logs and counters: `locker.on('failed', (e) => …)`.
 */
import type { Key } from '@google-cloud/datastore';
import type { DropReason } from './decision';

/** Fields every event has. */
export interface StepEvent {
  key: Key;
  seq: number;
  /** The attempt (request) the event is about; empty for kickoffs and sweeps. */
  attempt: string;
}

/** The events a Locker emits, by name. */
export interface LockerEvents {
  /** An attempt took a free lease and runs its handler. */
  acquired: [StepEvent];
  /** An attempt was refused: another attempt holds a fresh lease. */
  refused: [StepEvent & { holder: string; retryAfterMs: number }];
  /** A task was dropped without running. */
  dropped: [StepEvent & { reason: DropReason }];
  /** An attempt took over a stale lease. */
  overwritten: [StepEvent & { previous: string; leaseAgeMs: number }];
  /**
   * An attempt lost its lease while it ran: another attempt took it over, or no renewal succeeded
   * for long enough that it can no longer be proven held. Its signal aborted with `LeaseLostError`.
   */
  lost: [StepEvent];
  /** An attempt ran past `leaseTimeout`: its signal aborted with `LeaseTimeoutError` and its lease is no longer renewed. */
  timedOut: [StepEvent & { leaseTimeoutMs: number }];
  /** A handler threw; the lease was released for a retry. */
  released: [StepEvent & { retries: number; error: unknown }];
  /** A step failed for good. */
  failed: [StepEvent & { retries: number; error: unknown }];
  /** A step finished; `next` is the step it scheduled, if any. */
  completed: [StepEvent & { next?: number }];
  /** A step was committed with its task in the outbox (a kickoff, or a handler chaining). */
  scheduled: [StepEvent & { task: string; path: string }];
}
