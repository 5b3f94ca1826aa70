/**
 * What an operator sees of a live step's ledger record (docs/design.md, section 5): which task carries the
 * step now, how many were sent, whether creating them failed, when the sweep looks again. Pure:
 * the same record and clock give the same view. The payload itself is left out (it may be large
 * and is the caller's data); its size is shown.
 */
import type { LedgerRecord } from '../../types';

/** A step's ledger record as the operator's view shows it. */
export interface LedgerView {
  /** The record's id: the step's first task name, which the entity's `lock_task` names. */
  id: string;
  /** The task that carries the step now: `id`, or `<id>-s<send>-<random>` after a re-delivery. */
  task: string;
  /** Tasks sent for the step so far, the first included. */
  sends: number;
  /** When the last task was sent. */
  sentAt: Date;
  /** How long ago that was, ms. */
  sentAgeMs: number;
  /** Re-deliveries in a row whose task could not be created. */
  failures: number;
  /** When the sweep next looks at the step. */
  due: Date;
  /** How long until then, ms; negative when it is overdue. */
  dueInMs: number;
  /** When the record was committed, with the step: when the step was scheduled. */
  createdAt: Date;
  /** When the step was asked to run, if later than its scheduling (`schedule(…, { delayMs | at })`). */
  scheduleTime?: Date;
  /** The handler path its tasks are sent to. */
  path: string;
  /** The size of its payload (the tasks' body), bytes. */
  bodyBytes: number;
}

/** The view of `record` at `now` (epoch ms). */
export function viewLedger(record: LedgerRecord, now: number): LedgerView {
  const view: LedgerView = {
    id: record.id, task: record.task, sends: record.sends,
    sentAt: record.sentAt, sentAgeMs: Math.max(0, now - record.sentAt.getTime()),
    failures: record.failures, due: record.due, dueInMs: record.due.getTime() - now,
    createdAt: record.createdAt, path: record.path, bodyBytes: Buffer.byteLength(record.body),
  };
  if (record.scheduleTime) view.scheduleTime = record.scheduleTime;
  return view;
}
