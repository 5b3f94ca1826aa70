/**
 * The transactional outbox that replaces App Engine's transactional enqueue (DESIGN section 5): a
 * step and its task are committed in one transaction; the task is created after the commit; a
 * sweep re-sends what was committed but never created.
 */
import type { Key } from '@google-cloud/datastore';
import { SCHEDULE_OPTION_NAMES, type ScheduleOptions } from './context';
import type { Core } from './core';
import { ConfigError } from './errors';
import { keyPath } from './key-codec';
import { rejectUnknownOptions } from './option-names';
import { readLock, type Lock } from './lock-fields';
import { taskName } from './task-name';
import { kickoff, schedule } from './transitions';
import { Headers, StepState, type Json, type OutboxRecord, type TaskRequest } from './types';

/** Cloud Tasks' limits: a task's size and how far ahead it may be scheduled. */
const MAX_BODY_BYTES = 100 * 1024 - 4 * 1024; // headroom for headers and the task's own fields
const MAX_AHEAD_MS = 30 * 24 * 60 * 60 * 1000;

/** A step to schedule, checked before any transaction starts. */
export interface NextStep {
  path: string;
  body: string;
  scheduleTime: Date | undefined;
}

/** Checks what a caller asked to schedule; throws a `TypeError`/`RangeError` saying what is wrong. */
export function checkStep(core: Core, path: string, payload: Json | undefined, options: ScheduleOptions = {}): NextStep {
  if (!core.config.queue) throw new ConfigError('schedule() needs a queue: pass `queue` to the Locker.');
  rejectUnknownOptions('schedule()', options, SCHEDULE_OPTION_NAMES);
  if (typeof path !== 'string' || !/^\/[\x21-\x7e]*$/.test(path)) {
    throw new TypeError(`the task path must start with "/" and contain no spaces; got ${JSON.stringify(path)}`);
  }
  const body = payload === undefined ? '' : JSON.stringify(payload);
  if (body === undefined) throw new TypeError('the payload must be JSON');
  if (Buffer.byteLength(body) > MAX_BODY_BYTES) {
    throw new RangeError(`the payload is ${Buffer.byteLength(body)} bytes; Cloud Tasks takes at most ${MAX_BODY_BYTES}`);
  }
  return { path, body, scheduleTime: scheduleTime(core.config.clock(), options) };
}

function scheduleTime(now: number, options: ScheduleOptions): Date | undefined {
  if (options.delayMs !== undefined && options.at !== undefined) throw new TypeError('give either delayMs or at, not both');
  let at: number | undefined;
  if (options.delayMs !== undefined) {
    if (!Number.isFinite(options.delayMs) || options.delayMs < 0) throw new RangeError('delayMs must be a number of ms ≥ 0');
    at = now + options.delayMs;
  } else if (options.at !== undefined) {
    if (!(options.at instanceof Date) || Number.isNaN(options.at.getTime())) throw new TypeError('at must be a valid Date');
    at = options.at.getTime();
  }
  if (at === undefined || at <= now) return undefined;
  if (at - now > MAX_AHEAD_MS) throw new RangeError('a task may be scheduled at most 30 days ahead');
  return new Date(at);
}

/**
 * The lock of a newly scheduled step, and its outbox record: `schedule` from a running step, or
 * `kickoff` on an idle entity (which throws `ChainBusyError` when it is not idle).
 */
export function scheduledStep(
  key: Key, from: Lock, chain: string, step: NextStep, now: Date, how: 'schedule' | 'kickoff' = 'schedule',
): { lock: Lock; record: OutboxRecord } {
  const seq = from.seq + 1;
  const name = taskName(key, chain, seq);
  const lock = (how === 'kickoff' ? kickoff : schedule)(from, { now, chain, task: name });
  const record: OutboxRecord = { name, key, seq, path: step.path, body: step.body, createdAt: now };
  if (step.scheduleTime) record.scheduleTime = step.scheduleTime;
  return { lock, record };
}

/**
 * Creates the task of an outbox record and removes the record. A failure is logged and leaves the
 * record for the sweeper; it returns whether the task was created.
 */
export async function dispatch(core: Core, record: OutboxRecord, chain: string | undefined): Promise<boolean> {
  const queue = core.config.queue;
  if (!queue) return false;
  try {
    await core.ready;
    await queue.enqueue(taskRequest(core, record, chain));
  } catch (error) {
    core.config.logger.warn('task not created; the sweeper will send it', {
      task: record.name, key: keyPath(record.key), seq: record.seq, error: error instanceof Error ? error.message : String(error),
    });
    return false;
  }
  try {
    await core.config.store.deleteOutbox(record);
  } catch (error) {
    // Harmless: the sweeper finds the step moved on (or re-sends under the same name, de-duplicated).
    core.config.logger.warn('outbox record not removed', { task: record.name, error: String(error) });
  }
  return true;
}

/** The task request for an outbox record. */
export function taskRequest(core: Core, record: OutboxRecord, chain: string | undefined): TaskRequest {
  const headers: Record<string, string> = { [Headers.key]: core.encodeKey(record.key), [Headers.seq]: String(record.seq) };
  if (chain) headers[Headers.chain] = chain;
  const task: TaskRequest = { name: record.name, path: record.path, headers, body: record.body };
  if (record.scheduleTime) task.scheduleTime = record.scheduleTime;
  return task;
}

/** What a sweep did. */
export interface SweepResult {
  /** Records whose task was created now. */
  resent: number;
  /** Records removed because their step had moved on or already runs. */
  cleared: number;
  /** Records whose task could still not be created (kept for the next sweep). */
  failed: number;
}

/** Re-sends outbox records older than the grace period whose step still waits for its task. */
export async function sweep(core: Core, limit: number): Promise<SweepResult> {
  const { store, clock, sweepGrace } = core.config;
  const result: SweepResult = { resent: 0, cleared: 0, failed: 0 };
  const records = await store.listOutbox(new Date(clock() - sweepGrace), limit);
  for (const record of records) {
    const props = await store.get(record.key);
    const lock = props ? readLock(props) : undefined;
    const waiting = lock !== undefined && lock.state === StepState.scheduled && lock.seq === record.seq && lock.task === record.name && lock.req === '';
    if (!waiting) {
      await store.deleteOutbox(record);
      result.cleared++;
    } else if (await dispatch(core, record, lock.chain)) {
      result.resent++;
    } else {
      result.failed++;
    }
  }
  if (records.length > 0) core.config.logger.info('sweep done', { ...result });
  return result;
}

