/**
 * The ledger of live steps (docs/design.md, section 5). A step's record is committed with the step, names
 * the task that carries it, and stays while the step is live; it is removed lazily once the step
 * finished, failed for good or moved on (a record left behind is cleared by the sweep). From the
 * records that are due, `sweep()` re-delivers every stalled step under a new task name.
 */
import { randomBytes } from 'node:crypto';
import type { Key } from '@google-cloud/datastore';
import type { Core } from '../core';
import { keyPath } from '../store/key-codec';
import { taskName } from './task-name';
import { Headers, type LedgerRecord, type TaskRequest } from '../types';

/** What a new step's record is made of. */
export interface LedgerStep {
  path: string;
  body: string;
  scheduleTime: Date | undefined;
}

/**
 * The record of step `seq` of `chain` on `key`, committed with it. Its first task is named by the
 * step; the sweep first looks at it `stallAfter` after the step is due to run.
 */
export function newLedgerRecord(key: Key, seq: number, chain: string, step: LedgerStep, now: Date, stallAfter: number): LedgerRecord {
  const id = taskName(key, chain, seq);
  const runsAt = Math.max(now.getTime(), step.scheduleTime?.getTime() ?? 0);
  const record: LedgerRecord = {
    id, key, seq, chain, path: step.path, body: step.body, createdAt: now,
    task: id, sends: 1, sentAt: now, failures: 0, due: new Date(runsAt + stallAfter),
  };
  if (step.scheduleTime) record.scheduleTime = step.scheduleTime;
  return record;
}

/**
 * A new task name for another send of the record's step: the step's own name, the send's number
 * and a random part, so it never repeats, also after a restored backup set the counter back
 * (Cloud Tasks refuses a name used in the last hour, and answers ALREADY_EXISTS for it).
 */
export function resendName(record: LedgerRecord, send: number): string {
  return `${record.id}-s${send}-${randomBytes(6).toString('hex')}`;
}

/** The task request for the record's current task (`record.task`). */
export function taskRequest(core: Core, record: LedgerRecord): TaskRequest {
  const headers: Record<string, string> = {
    [Headers.key]: core.encodeKey(record.key),
    [Headers.seq]: String(record.seq),
    [Headers.chain]: record.chain,
  };
  if (record.sends > 1) headers[Headers.send] = String(record.sends);
  const task: TaskRequest = { name: record.task, path: record.path, headers, body: record.body };
  if (record.scheduleTime && record.sends === 1) task.scheduleTime = record.scheduleTime;
  return task;
}

/**
 * Creates the record's first task, after the commit. A failure is logged and leaves the step to
 * the sweep; returns whether the task was created.
 */
export async function dispatch(core: Core, record: LedgerRecord): Promise<boolean> {
  const queue = core.config.queue;
  if (!queue) return false;
  try {
    await core.ready; // the key's encoding may wait for the store's project id
    await queue.enqueue(taskRequest(core, record));
    return true;
  } catch (error) {
    core.config.logger.warn('task not created; the sweep re-delivers the step once it is stalled', {
      task: record.task, key: keyPath(record.key), seq: record.seq, error: error instanceof Error ? error.message : String(error),
    });
    return false;
  }
}
