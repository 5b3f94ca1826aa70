/**
 * Ledger records and their task names, as pure functions (docs/design.md, section 5): the record a
 * new step is committed with, the lock and record of a newly scheduled step, the next send of a
 * record (the sweep's and the operator's re-deliveries claim it the one same way), and which
 * records a finished step's removal must keep.
 *
 * Task names: a hash of the entity's key, the chain id and the sequence. Cloud Tasks advises
 * against sequential names (they crowd one key range), and a name must never repeat for a
 * different step: the chain id is random per kickoff, so an entity deleted and created again under
 * the same key gets new names.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Key } from '@google-cloud/datastore';
import { keyPath } from '../keys/key-codec';
import { readLock, type Lock } from './lock-fields';
import { kickoff, schedule } from './transitions';
import { StepState, type LedgerRecord, type Properties } from '../types';

/** A step to schedule, checked before any transaction starts (`chain/next-step.ts`). */
export interface NextStep {
  path: string;
  body: string;
  scheduleTime: Date | undefined;
  /** The Locker's `stallAfter`: when the sweep first looks at the step, after it is due. */
  stallAfter: number;
}

/**
 * The record of step `seq` of `chain` on `key`, committed with it. Its first task is named by the
 * step; the sweep first looks at it `stallAfter` after the step is due to run.
 */
export function newLedgerRecord(key: Key, seq: number, chain: string, step: NextStep, now: Date): LedgerRecord {
  const id = taskName(key, chain, seq);
  const runsAt = Math.max(now.getTime(), step.scheduleTime?.getTime() ?? 0);
  const record: LedgerRecord = {
    id, key, seq, chain, path: step.path, body: step.body, createdAt: now,
    task: id, sends: 1, sentAt: now, failures: 0, due: new Date(runsAt + step.stallAfter),
  };
  if (step.scheduleTime) record.scheduleTime = step.scheduleTime;
  return record;
}

/**
 * The lock of a newly scheduled step, and its ledger record: `schedule` from a running step, or
 * `kickoff` on an idle entity (which throws `ChainBusyError` when it is not idle).
 */
export function scheduledStep(
  key: Key, from: Lock, chain: string, step: NextStep, now: Date, how: 'schedule' | 'kickoff' = 'schedule',
): { lock: Lock; record: LedgerRecord } {
  const record = newLedgerRecord(key, from.seq + 1, chain, step, now);
  const lock = (how === 'kickoff' ? kickoff : schedule)(from, { now, chain, task: record.id });
  return { lock, record };
}

/**
 * The record with its next send claimed: a new task name, the send counted, sent now, no failure
 * yet, looked at again `interval` ms from now.
 */
export function nextSend(record: LedgerRecord, now: number, interval: number): LedgerRecord {
  const send = record.sends + 1;
  return { ...record, task: resendName(record, send), sends: send, sentAt: new Date(now), failures: 0, due: new Date(now + interval) };
}

/**
 * A new task name for another send of the record's step: the step's own name, the send's number
 * and a random part, so it never repeats, also after a restored backup set the counter back
 * (Cloud Tasks refuses a name used in the last hour, and answers ALREADY_EXISTS for it).
 */
export function resendName(record: LedgerRecord, send: number): string {
  return `${record.id}-s${send}-${randomBytes(6).toString('hex')}`;
}

/** The task name of step `seq` of `chain` on `key`: 32 hex digits, then the sequence. */
export function taskName(key: Key, chain: string, seq: number): string {
  const hash = createHash('sha256')
    .update(`${key.namespace ?? ''}\n${keyPath(key)}\n${chain}\n${seq}`)
    .digest('hex')
    .slice(0, 32);
  return `${hash}-${seq}`;
}

/** A new random chain id. */
export function newChainId(): string {
  return randomBytes(9).toString('base64url');
}

/**
 * Whether `entity`'s lock still needs the ledger record `id` (`LedgerNeeded`): it names the record
 * for a step scheduled or running, failed (kept for `locker.retry()`), or with alerts still unsent.
 * A step's record id is the same each time that step of that chain is scheduled, so a removal
 * queued when the step finished must not take the record of the same step scheduled again (an
 * entity restored from a backup, its step re-run): one named without the version its step read
 * the record at is checked by this rule when it is sent.
 */
export function recordNeeded(entity: Properties | undefined, id: string): boolean {
  if (!entity) return false;
  const lock = readLock(entity);
  if (lock.task !== id) return false;
  return lock.state === StepState.scheduled || lock.state === StepState.failed || lock.alerts.length > 0;
}
