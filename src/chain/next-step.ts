/**
 * The ledger write that replaces App Engine's transactional enqueue (a transactional outbox; docs/design.md, section 5): a
 * step and its ledger record are committed in one transaction (`commitNextStep`, the one way a next
 * step is written, by the kickoff and by `ctx.schedule()`); the task is created after the commit
 * (`sendNextStep`, through the dispatcher); the sweep re-delivers what stalls (`sweep.ts`).
 */
import type { SettingName, Settings } from '../config/settings';
import type { Key } from '@google-cloud/datastore';
import { ALERT_RULES, endStepAlerts, NO_ALERTS } from '../rules/alert-markers';
import type { Config } from '../config/options';
import { rejectUnknownOptions } from '../config/option-names';
import { ChainBusyError, ConfigError } from '../errors/errors';
import type { Dispatcher } from './dispatcher';
import type { Emit } from '../events/emit';
import type { Locks } from '../locks/locks';
import { readLock, type Lock } from '../rules/lock-fields';
import { newChainId, scheduledStep, type NextStep } from '../rules/ledger-record';
import { entityProperties, SCHEDULE_OPTION_NAMES, type ScheduledStep, type ScheduleOptions } from '../step/handler-types';
import { checkDeliverable, keyPath } from '../keys/key-codec';
import { settleReplacedInTx } from '../fanout/child-end';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../http/json-depth';
import type { Json, LedgerRecord, Properties, StoreTransaction } from '../types';

/** Cloud Tasks' limits: a task's size and how far ahead it may be scheduled. */
const MAX_BODY_BYTES = 100 * 1024 - 4 * 1024; // headroom for headers and the task's own fields
const MAX_AHEAD_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * What scheduling a next step reads of the configuration: the clock,
 * when a step's record comes due (`stallAfter`), and the alert rules its end keeps unsent claims by.
 */
export const CHAIN_SETTINGS = ['clock', 'stallAfter', ...ALERT_RULES] as const satisfies readonly SettingName[];
export type ChainSettings = Settings<typeof CHAIN_SETTINGS>;

/** Checks what a caller asked to schedule; throws a `TypeError`/`RangeError` saying what is wrong. */
export function checkStep(parts: { readonly config: Pick<ChainSettings, 'clock' | 'stallAfter'>; readonly dispatcher: Pick<Dispatcher, 'hasQueue'> }, path: string, payload: Json | undefined, options: ScheduleOptions = {}): NextStep {
  if (!parts.dispatcher.hasQueue) throw new ConfigError('schedule() needs a queue: pass `queue` to the Locker.');
  rejectUnknownOptions('schedule()', options, SCHEDULE_OPTION_NAMES);
  if (typeof path !== 'string' || !/^\/[\x21-\x7e]*$/.test(path)) {
    throw new TypeError(`the task path must start with "/" and contain no spaces; got ${JSON.stringify(path)}`);
  }
  const body = payload === undefined ? '' : JSON.stringify(payload);
  if (body === undefined) throw new TypeError('the payload must be JSON');
  if (Buffer.byteLength(body) > MAX_BODY_BYTES) {
    throw new RangeError(`the payload is ${Buffer.byteLength(body)} bytes; Cloud Tasks takes at most ${MAX_BODY_BYTES}`);
  }
  if (nestsDeeperThan(body)) throw new RangeError(`the payload nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels; a task route refuses it`);
  return { path, body, scheduleTime: scheduleTime(parts.config.clock(), options), stallAfter: parts.config.stallAfter };
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
 * Commits the next step in `tx`, the one way a step is scheduled: the lock of the `schedule` (from
 * a running step) or `kickoff` (on an idle entity) transition, with the user's `own` properties, the
 * step's ledger record, and the removal of the record of the step it follows. Overwrite alerts of
 * the lock still unsent, less `sent`, stay on it (`endStepAlerts`). Throws `ChainBusyError` when a
 * kickoff finds the chain busy.
 */
export function commitNextStep(
  parts: { readonly config: ChainSettings; readonly locks: Locks }, tx: StoreTransaction, key: Key, props: Properties, from: Lock,
  next: { chain: string; step: NextStep; how: 'schedule' | 'kickoff'; own: Properties; sent: readonly string[] }, now: Date,
): { lock: Lock; record: LedgerRecord } {
  const planned = endStepAlerts(parts.config, scheduledStep(key, from, next.chain, next.step, now, next.how), from, next.sent, now);
  parts.locks.put(tx, key, props, planned.lock, next.own);
  if (from.task !== undefined) tx.deleteLedger(key, from.task); // the step it follows moved on: its record goes in the same commit
  tx.putLedger(planned.record);
  return planned;
}

/** After the commit: reports the step scheduled and creates its task (a failure is left to the sweep). */
export async function sendNextStep(parts: { readonly emit: Emit; readonly dispatcher: Dispatcher }, record: LedgerRecord, attempt: string): Promise<ScheduledStep> {
  parts.emit('scheduled', { key: record.key, seq: record.seq, attempt, task: record.task, path: record.path });
  const sent = await parts.dispatcher.send(record);
  return { seq: record.seq, task: record.task, sent };
}

/**
 * Starts a chain on `key` (`locker.schedule()`): saves `entity` with step `lock_seq + 1` scheduled
 * and its ledger record, in one transaction, then creates the task. Throws `ChainBusyError` when
 * the chain already has a step scheduled or running, and a `TypeError` before writing anything
 * when the key could not be delivered in a task.
 */
export async function kickoff(
  parts: { readonly config: ChainSettings & Pick<Config, 'keyAppId'>; readonly locks: Locks; readonly emit: Emit; readonly dispatcher: Dispatcher }, key: Key, entity: unknown, path: string, payload?: Json, options?: ScheduleOptions,
): Promise<ScheduledStep> {
  const step = checkStep(parts, path, payload, options);
  checkDeliverable(key, parts.config.keyAppId);
  const now = new Date(parts.config.clock());
  const chain = newChainId();
  const own = entityProperties(entity);
  const record = await parts.locks.update(key, async (tx, found) => {
    let planned;
    try {
      // An earlier chain's overwrite alerts still unsent stay on the lock until someone sends them.
      planned = commitNextStep(parts, tx, key, found?.props ?? {}, found?.lock ?? readLock({}), { chain, step, how: 'kickoff', own, sent: NO_ALERTS }, now);
    } catch (error) {
      if (error instanceof ChainBusyError) throw new ChainBusyError(`${keyPath(key)}: ${error.message}`);
      throw error;
    }
    // A fan-out child's chain that ended unsettled is settled from its lock before the lock is replaced.
    if (found) await settleReplacedInTx(tx, key, found.lock, now, (k) => parts.dispatcher.encodeKey(k));
    return planned.record;
  });
  return sendNextStep(parts, record, '');
}
