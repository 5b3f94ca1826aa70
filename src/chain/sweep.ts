/**
 * `sweep()`: reads the ledger records that are due (one indexed query per namespace, at most
 * `limit`, oldest due first) and carries out `stallVerdict()` on each: clears records of steps no
 * longer live, moves the due time of steps making progress, and re-delivers stalled steps under a
 * new task name. Every change to a record is a compare-and-swap in a transaction (on the task it
 * names and its send count), so two sweeps never both re-deliver one send and a sweep never brings
 * back a record the step removed. One record's failure never stops the others.
 */
import type { SettingName, Settings } from '../config/settings';
import type { Parts } from '../parts';
import { FANOUT_SETTINGS } from '../fanout/read-children';
import { resendUnsentFailure, resendUnsentOverwrites } from '../alert/resend';
import { keyPath } from '../keys/key-codec';
import { readLock, type Lock } from '../rules/lock-fields';
import { failureInterval, resendInterval, stallVerdict } from '../rules/stall';
import type { LedgerRecord } from '../types';
import { sweepFanOuts } from '../fanout/sweep';
import type { TickResult } from '../recurring/recurring-types';

/** What a sweep reads of the configuration: the fan-out settings (the clock, the logger, `stallAfter`, the alert rules) and the lease's duration. */
export const SWEEP_SETTINGS = [...FANOUT_SETTINGS, 'leaseDuration'] as const satisfies readonly SettingName[];
export type SweepSettings = Settings<typeof SWEEP_SETTINGS>;

/** The parts a sweep uses, with its settings. */
export type SweepParts = Pick<Parts, 'emit' | 'alerts' | 'locks' | 'reads' | 'dispatcher' | 'ledger'> & { readonly config: SweepSettings };

/** What a sweep did. */
export interface SweepResult {
  /** Stalled steps re-delivered: their new task was created. */
  resent: number;
  /** Records removed because their step finished, failed for good or moved on. */
  cleared: number;
  /** Steps still live and making progress: looked at again later. */
  waiting: number;
  /** Stalled steps whose new task could not be created (retried later, with backoff), or records that could not be handled now. */
  failed: number;
  /** Records that are not valid ledger records: skipped and logged. */
  malformed: number;
  /**
   * Alerts sent again, failure and overwrite alerts alike: claimed on the entity but never marked
   * sent (the process died or was frozen after its answer, or the alerter failed). Each under the
   * id of its first send.
   */
  alerted: number;
  /** Fan-outs whose join this sweep committed (their own check was lost or their deadline passed; see `ctx.fanOut()`). */
  joined?: number;
  /** With schedules declared (`locker.recurring()`): what the sweep's tick did, or why it failed. */
  recurring?: TickResult | {
    /** Why the tick failed (logged; the next sweep ticks again). */
    error: string;
  };
}

/** Malformed ledger records logged one by one in a sweep; the rest are counted in one line. */
const LOGGED_MALFORMED = 20;

/** Largest `limit` a sweep accepts. */
export const MAX_SWEEP_LIMIT = 10_000;

/** Sweeps once: see the file's comment. */
export async function sweep(parts: SweepParts, limit: number): Promise<SweepResult> {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_SWEEP_LIMIT) {
    throw new RangeError(`sweep(limit): limit must be a whole number from 1 to ${MAX_SWEEP_LIMIT}; got ${String(limit)}`);
  }
  const { clock, logger } = parts.config;
  const result: SweepResult = { resent: 0, cleared: 0, waiting: 0, failed: 0, malformed: 0, alerted: 0 };
  const due = await parts.reads.listDue(new Date(clock()), limit);
  for (const why of due.malformed.slice(0, LOGGED_MALFORMED)) logger.warn('ledger record skipped: it is malformed', { record: why });
  if (due.malformed.length > LOGGED_MALFORMED) {
    logger.warn('more malformed ledger records skipped', { more: due.malformed.length - LOGGED_MALFORMED });
  }
  result.malformed = due.malformed.length;
  for (const record of due.records) {
    try {
      result[await sweepOne(parts, record, result)]++;
    } catch (error) {
      result.failed++;
      logger.warn('ledger record not handled; the next sweep tries again', { ...where(record), error: String(error) });
    }
  }
  if (due.records.length + due.malformed.length > 0) logger.info('sweep done', { ...result });
  try {
    const fanOuts = await sweepFanOuts(parts, limit);
    if (fanOuts.joined > 0) result.joined = fanOuts.joined;
  } catch (error) {
    logger.warn('fan-outs not swept; the next sweep tries again', { error: String(error) });
  }
  return result;
}

type Outcome = 'resent' | 'cleared' | 'waiting' | 'failed';

async function sweepOne(parts: SweepParts, record: LedgerRecord, result: SweepResult): Promise<Outcome> {
  const { clock, stallAfter, leaseDuration } = parts.config;
  const props = await parts.reads.get(record.key);
  const lock = props ? readLock(props) : undefined;
  const now = clock();
  const failure = await resendUnsentFailure(parts, record, props, lock, now);
  if (failure === 'sent') result.alerted++;
  const overwrites = await resendUnsentOverwrites(parts, record, props, lock, now);
  result.alerted += overwrites?.sent ?? 0;
  // Alerts still owed keep the record (also that of a step no longer live) and bring it back by then.
  const alertsDue = Math.min(typeof failure === 'number' ? failure : Infinity, overwrites?.due ?? Infinity);
  const timings = { now, stallAfter, leaseDuration };
  const verdict = stallVerdict(lock, record, timings);
  if (verdict.action === 'clear' && alertsDue === Infinity) {
    // Cleared only if the step is still not live when read again with the record, in one
    // transaction: a batch kickoff's entity may land after the read above (its record came first).
    const why = await parts.ledger.clear(record, (entity, current) => {
      const again = stallVerdict(entity ? readLock(entity) : undefined, current, timings);
      return again.action === 'clear' ? again.why : undefined;
    });
    if (why === undefined) return 'waiting'; // the next sweep looks again
    parts.config.logger.info('ledger record cleared', { ...where(record), why });
    return 'cleared';
  }
  if (verdict.action !== 'resend') {
    const due = Math.min(verdict.action === 'wait' ? verdict.due : Infinity, alertsDue);
    await parts.ledger.update(record, (r) => ({ ...r, due: new Date(due) }));
    return 'waiting';
  }
  return resend(parts, record, lock!, now);
}

/** Claims the next send on the record, then creates its task under the new name. */
async function resend(parts: SweepParts, record: LedgerRecord, lock: Lock, now: number): Promise<Outcome> {
  const claimed = await parts.ledger.claimNextSend(record, now, resendInterval(lock, record, parts.config.stallAfter));
  if (!claimed) return 'waiting';
  const failed = await parts.dispatcher.enqueue(claimed);
  if (failed) {
    const retryIn = failureInterval(record.failures, parts.config.stallAfter);
    // Nothing was sent: the step's last progress stays what it was, so the next try re-sends at once.
    await parts.ledger.update(claimed, (r) => ({ ...r, sentAt: record.sentAt, failures: record.failures + 1, due: new Date(now + retryIn) }));
    parts.config.logger.warn('stalled step not re-delivered: its task could not be created; retrying later', {
      ...where(claimed), retryInMs: retryIn, error: failed.error instanceof Error ? failed.error.message : String(failed.error),
    });
    return 'failed';
  }
  parts.emit('resent', { key: claimed.key, seq: claimed.seq, attempt: '', task: claimed.task, path: claimed.path, send: claimed.sends });
  parts.config.logger.warn('stalled step re-delivered under a new task name', { ...where(claimed), send: claimed.sends, previous: record.task });
  return 'resent';
}

function where(record: LedgerRecord): Record<string, unknown> {
  return { key: keyPath(record.key), namespace: record.key.namespace, seq: record.seq, task: record.task };
}
