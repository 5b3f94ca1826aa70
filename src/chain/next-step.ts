/**
 * The transactional outbox that replaces App Engine's transactional enqueue (docs/design.md, section 5): a
 * step and its ledger record are committed in one transaction; the task is created after the
 * commit (`ledger.ts`); the sweep re-delivers what stalls (`sweep.ts`).
 */
import type { Key } from '@google-cloud/datastore';
import { SCHEDULE_OPTION_NAMES, type ScheduleOptions } from '../step/handler-types';
import type { Core } from '../core';
import { ConfigError } from '../errors/errors';
import { newLedgerRecord } from './dispatcher';
import type { Lock } from '../rules/lock-fields';
import { rejectUnknownOptions } from '../config/option-names';
import { kickoff, schedule } from '../rules/transitions';
import type { Json, LedgerRecord } from '../types';

/** Cloud Tasks' limits: a task's size and how far ahead it may be scheduled. */
const MAX_BODY_BYTES = 100 * 1024 - 4 * 1024; // headroom for headers and the task's own fields
const MAX_AHEAD_MS = 30 * 24 * 60 * 60 * 1000;

/** A step to schedule, checked before any transaction starts. */
export interface NextStep {
  path: string;
  body: string;
  scheduleTime: Date | undefined;
  /** The Locker's `stallAfter`: when the sweep first looks at the step, after it is due. */
  stallAfter: number;
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
  return { path, body, scheduleTime: scheduleTime(core.config.clock(), options), stallAfter: core.config.stallAfter };
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
 * The lock of a newly scheduled step, and its ledger record: `schedule` from a running step, or
 * `kickoff` on an idle entity (which throws `ChainBusyError` when it is not idle).
 */
export function scheduledStep(
  key: Key, from: Lock, chain: string, step: NextStep, now: Date, how: 'schedule' | 'kickoff' = 'schedule',
): { lock: Lock; record: LedgerRecord } {
  const record = newLedgerRecord(key, from.seq + 1, chain, step, now, step.stallAfter);
  const lock = (how === 'kickoff' ? kickoff : schedule)(from, { now, chain, task: record.id });
  return { lock, record };
}
