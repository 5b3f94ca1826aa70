/**
 * A fan-out's policy and the outcome it gives the join, as pure functions. The join always runs
 * once every child settled (or the deadline passed): the policy only decides what it is told.
 */
import type { OptionNames } from '../config/option-names';
import { rejectUnknownOptions } from '../config/option-names';
import type { ChildCounts } from './records';

/** What the join is told, and when a fan-out counts as failed. */
export interface FanOutPolicy {
  /**
   * `settled` (the default): the outcome is `succeeded` when no child failed, else `tolerated` (a
   * failed child never parks the parent). `succeeded`: any failed child makes the outcome `failed`.
   */
  require?: 'settled' | 'succeeded';
  /** Failed children tolerated (failed, cancelled or timed out); one more makes the outcome `failed`. */
  tolerate?: number;
  /** Share of the children (0 to 1) tolerated as failed; above it, the outcome is `failed`. */
  tolerateShare?: number;
  /** After this many ms from the seal, children still pending count as `timedOut` and the join runs. */
  deadlineMs?: number;
}

/** Every option name of {@link FanOutPolicy}. */
export const POLICY_NAMES: OptionNames<FanOutPolicy> = { require: true, tolerate: true, tolerateShare: true, deadlineMs: true };

/**
 * What the join is told: `succeeded` (every child succeeded), `tolerated` (some failed, within the
 * policy), `failed` (more failed than the policy tolerates), `cancelled` (an operator cancelled the
 * fan-out and asked for the join to run).
 */
export type FanOutOutcome = 'succeeded' | 'tolerated' | 'failed' | 'cancelled';

/** Checks a policy; throws a `TypeError`/`RangeError` saying what is wrong. */
export function checkPolicy(policy: FanOutPolicy = {}): FanOutPolicy {
  if (typeof policy !== 'object' || policy === null) throw new TypeError('fanOut(): policy must be an object');
  rejectUnknownOptions('fanOut() policy', policy, POLICY_NAMES);
  if (policy.require !== undefined && policy.require !== 'settled' && policy.require !== 'succeeded') {
    throw new RangeError(`fanOut(): policy.require must be "settled" or "succeeded"; got ${String(policy.require)}`);
  }
  if (policy.tolerate !== undefined && (!Number.isSafeInteger(policy.tolerate) || policy.tolerate < 0)) {
    throw new RangeError('fanOut(): policy.tolerate must be a whole number ≥ 0');
  }
  if (policy.tolerateShare !== undefined && !(policy.tolerateShare >= 0 && policy.tolerateShare <= 1)) {
    throw new RangeError('fanOut(): policy.tolerateShare must be from 0 to 1');
  }
  if (policy.deadlineMs !== undefined && !(Number.isFinite(policy.deadlineMs) && policy.deadlineMs > 0)) {
    throw new RangeError('fanOut(): policy.deadlineMs must be a number of ms > 0');
  }
  return { ...policy };
}

/** How many failed children the policy tolerates out of `total`. */
export function tolerated(policy: FanOutPolicy, total: number): number {
  const limits: number[] = [];
  if (policy.tolerate !== undefined) limits.push(policy.tolerate);
  if (policy.tolerateShare !== undefined) limits.push(Math.floor(policy.tolerateShare * total));
  if (limits.length > 0) return Math.min(...limits);
  return policy.require === 'succeeded' ? 0 : Number.POSITIVE_INFINITY;
}

/** The outcome of settled children under `policy`. */
export function outcomeOf(policy: FanOutPolicy, counts: ChildCounts): FanOutOutcome {
  const failures = counts.failed + counts.cancelled + counts.timedOut + counts.pending;
  if (failures === 0) return 'succeeded';
  return failures <= tolerated(policy, counts.total) ? 'tolerated' : 'failed';
}
