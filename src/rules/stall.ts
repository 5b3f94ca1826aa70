/**
 * What the sweep does with a due ledger record, in pure functions beside `decide()`: clear it (its
 * step is no longer live), wait (the step is making progress), or re-deliver it (stalled). A step
 * is stalled when nothing happened to it for `stallAfter` (no task sent, no lease taken, renewed
 * or released) and no attempt holds a fresh lease: its task was never created, was lost, or
 * every attempt that took it died.
 */
import type { Lock } from './lock-fields';
import { StepState, type LedgerRecord } from '../types';

/** The longest wait between re-deliveries of a step that makes no progress, ms (Cloud Tasks' default max backoff). */
export const MAX_RESEND_INTERVAL_MS = 3_600_000;

/** What the sweep does with a due record. */
export type StallVerdict =
  | { action: 'clear'; why: string }
  | { action: 'wait'; due: number }
  | { action: 'resend' };

/** The timings the verdict depends on, ms. */
export interface StallTimings {
  now: number;
  stallAfter: number;
  leaseDuration: number;
}

/**
 * How long the ledger record of a step that failed for good is kept, ms: it holds the step's path
 * and payload, which `locker.retry()` needs to send the step again. A kickoff of a new chain on the
 * entity removes it sooner.
 */
export const FAILED_RECORD_RETENTION_MS = 30 * 24 * 3_600_000;

/** Decides on a due record, given the lock its entity has now (undefined when it is gone). */
export function stallVerdict(lock: Lock | undefined, record: LedgerRecord, t: StallTimings): StallVerdict {
  const keepUntil = failedUntil(lock, record);
  if (keepUntil !== undefined && t.now < keepUntil) return { action: 'wait', due: keepUntil };
  const gone = notLive(lock, record);
  if (gone) return { action: 'clear', why: gone };
  const since = lastProgress(lock!, record);
  const leaseFresh = lock!.req !== '' && lock!.ts !== undefined && lock!.ts.getTime() + t.leaseDuration > t.now;
  if (leaseFresh || t.now < since + t.stallAfter) return { action: 'wait', due: Math.max(since + t.stallAfter, t.now + 1) };
  return { action: 'resend' };
}

/** Why the record's step is no longer live, or undefined while it is. */
function notLive(lock: Lock | undefined, record: LedgerRecord): string | undefined {
  if (!lock) return 'the entity is gone';
  if (lock.chain !== undefined && lock.chain !== record.chain) return 'the entity runs another chain';
  if (lock.seq !== record.seq) return lock.seq > record.seq ? 'the step moved on' : 'the entity is behind the step';
  if (lock.state !== StepState.scheduled) return `the step is ${lock.state ?? 'not scheduled'}`;
  return undefined;
}

/** Whether the record is that of a step that failed for good: the lock's own step, failed, in the record's chain. */
export function recordsFailedStep(lock: Lock | undefined, record: LedgerRecord): lock is Lock {
  return lock !== undefined && lock.state === StepState.failed && lock.seq === record.seq && (lock.chain === undefined || lock.chain === record.chain);
}

/** Until when a failed step's record is kept for a retry, or undefined when the record is not of the failed step. */
function failedUntil(lock: Lock | undefined, record: LedgerRecord): number | undefined {
  return recordsFailedStep(lock, record) ? (lock.ts?.getTime() ?? 0) + FAILED_RECORD_RETENTION_MS : undefined;
}

/** The last time anything happened to the step: lock written, task sent, or the step came due. */
function lastProgress(lock: Lock, record: LedgerRecord): number {
  return Math.max(lock.ts?.getTime() ?? 0, record.sentAt.getTime(), record.scheduleTime?.getTime() ?? 0);
}

/**
 * How long after a re-delivery the sweep looks again: `stallAfter`, doubling with each
 * re-delivery that brought no progress (the lock was not written since the last send), at most an
 * hour (or `stallAfter`, if longer).
 */
export function resendInterval(lock: Lock, record: LedgerRecord, stallAfter: number): number {
  const progressed = (lock.ts?.getTime() ?? 0) > record.sentAt.getTime();
  const quiet = progressed ? 0 : Math.min(record.sends - 1, 16);
  return Math.min(stallAfter * 2 ** quiet, Math.max(MAX_RESEND_INTERVAL_MS, stallAfter));
}

/** How long after a re-delivery whose task could not be created the sweep tries again: doubling per failure in a row. */
export function failureInterval(failures: number, stallAfter: number): number {
  const base = Math.max(1_000, Math.floor(stallAfter / 4));
  return Math.min(base * 2 ** Math.min(failures, 16), Math.max(MAX_RESEND_INTERVAL_MS, stallAfter));
}
