/**
 * Every lease rule, in pure functions: given what is stored and what arrived, what to do. The
 * store, the middleware and the sweeper only carry these decisions out (docs/design.md, section 4).
 */
import type { Lock } from './lock-fields';
import { StepState } from '../types';

/** Why a task is dropped (answered 200 without running). */
export const DropReason = {
  /** The entity does not exist: an orphan task. */
  missing: 'missing',
  /** The step already finished: a duplicate delivery. */
  finished: 'finished',
  /** No such step was scheduled (a sequence ahead of the entity, or a chain that is not running). */
  unscheduled: 'unscheduled',
  /** The task belongs to an earlier chain of this entity. */
  otherChain: 'other-chain',
  /** The step failed for good. */
  failed: 'failed',
  /** The operator cancelled the chain. */
  cancelled: 'cancelled',
} as const;
export type DropReason = (typeof DropReason)[keyof typeof DropReason];

/** What to do with a task that arrived for a step. */
export type Decision =
  | { action: 'drop'; reason: DropReason }
  | { action: 'acquire' }
  | { action: 'overwrite'; previous: string; leaseAgeMs: number }
  | { action: 'expire'; previous: string; leaseAgeMs: number }
  | { action: 'refuse'; holder: string; retryAfterMs: number };

/** What the rules look at when a task arrives (the task itself is an `Arrival`, see http/arrival.ts). */
export interface Situation {
  /** The stored lock; undefined when the entity does not exist. */
  lock: Lock | undefined;
  /** The task's step. */
  seq: number;
  /** The task's chain, when the task says (`X-Lock-Chain`); Go tasks do not. */
  chain?: string;
  /** The arriving attempt's id. */
  attempt: string;
  /** Now, in epoch ms. */
  now: number;
  leaseDurationMs: number;
  /**
   * How long a lease the Go library holds (a lock without `lock_state`) lasts: Go never renews,
   * so its leases are judged by its own lease timeout. Defaults to `leaseDurationMs`.
   */
  goLeaseTimeoutMs?: number;
  maxRetries: number;
}

/**
 * Decides what to do with an arriving task.
 *
 * - `acquire`: the lease is free (or already this attempt's): take it and run.
 * - `overwrite`: the lease is stale (not renewed for `leaseDuration`; a Go-held lease: not written
 *   for `goLeaseTimeout`): its holder crashed or hung.
 *   Take it over (counting the lost attempt as a failure) and run. Inside a transaction this is a
 *   compare-and-swap: the decision is made on what the transaction read, and the commit fails if
 *   anything changed since.
 * - `expire`: as `overwrite`, but the lost attempt was the last one `maxRetries` allows: fail the step.
 * - `refuse`: another attempt holds a fresh lease: try again later.
 * - `drop`: nothing to run.
 */
export function decide(a: Situation): Decision {
  const { lock } = a;
  if (!lock) return { action: 'drop', reason: DropReason.missing };
  if (a.chain !== undefined && lock.chain !== undefined && a.chain !== lock.chain) {
    return { action: 'drop', reason: DropReason.otherChain };
  }
  if (lock.seq > a.seq) return { action: 'drop', reason: DropReason.finished };
  if (lock.seq < a.seq) return { action: 'drop', reason: DropReason.unscheduled };
  if (lock.state === StepState.failed) return { action: 'drop', reason: DropReason.failed };
  if (lock.state === StepState.cancelled) return { action: 'drop', reason: DropReason.cancelled };
  if (lock.state !== StepState.scheduled) return { action: 'drop', reason: DropReason.unscheduled };
  if (lock.req === '' || lock.req === a.attempt) return { action: 'acquire' };
  const leaseAgeMs = lock.ts ? a.now - lock.ts.getTime() : Number.POSITIVE_INFINITY;
  const lasts = lock.legacy ? (a.goLeaseTimeoutMs ?? a.leaseDurationMs) : a.leaseDurationMs;
  if (leaseAgeMs >= lasts) {
    const action = lock.tries + 1 >= a.maxRetries ? 'expire' : 'overwrite';
    return { action, previous: lock.req, leaseAgeMs };
  }
  return { action: 'refuse', holder: lock.req, retryAfterMs: lasts - leaseAgeMs };
}

/** Whether `attempt` may still write on behalf of step `seq` (the fencing rule). */
export function holds(lock: Lock | undefined, attempt: string, seq: number): boolean {
  return lock !== undefined && lock.state === StepState.scheduled && lock.req === attempt && lock.seq === seq;
}

/** After a handler threw: release the lease for a retry, or fail the step for good. */
export function afterFailure(lock: Lock, maxRetries: number, permanent: boolean): 'release' | 'fail' {
  return permanent || lock.tries + 1 >= maxRetries ? 'fail' : 'release';
}
