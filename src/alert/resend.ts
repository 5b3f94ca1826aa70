/**
 * Alerts owed, sent again: a claim in `lock_alerts` not yet marked sent (its sender died, or the
 * alerter failed) is sent again under the same id, and marked. Whoever takes a lease over sends the
 * lock's unmarked overwrite alerts (`unsentOverwriteAlerts`); once nobody holds the lease, the sweep
 * sends them (`resendUnsentOverwrites`), and a failure's alert still unmarked a grace after the
 * step failed (`resendUnsentFailure`).
 */
import type { Key } from '@google-cloud/datastore';
import { alertGrace, carriedFailures, failureMarker, markAlertsSent, unsentFailure, unsentOverwrites, type AlertRules, type FailureClaim, type OverwriteClaim } from '../rules/alert-markers';
import { alertEvent, type ClaimedAlert } from './event';
import type { Config } from '../config/options';
import type { AlertSender } from './sender';
import { keyPath } from '../keys/key-codec';
import type { Lock } from '../rules/lock-fields';
import { recordsFailedStep } from '../rules/stall';
import { AlertReason, type AlertEvent, type LedgerRecord, type Properties, type TaskInfo } from '../types';

/** What the sweep's resends use: the alert rules and the logger, and the alert part that sends and marks. */
export interface ResendParts {
  readonly config: AlertRules & Pick<Config, 'logger'>;
  readonly alerts: AlertSender;
}

/**
 * The events of the lock's claims still unmarked that whoever takes the lease, or the sweep, sends:
 * its overwrite alerts, and the failure alerts a step's end carried over (a kickoff after a failed
 * step whose alert was not sent), less `except` (a marker the caller sends with richer facts).
 * Their ids are those of the first send: an id names the step and the attempt, nothing else.
 */
export function unsentOverwriteAlerts(
  rules: AlertRules, key: Key, lock: Lock, props: Properties, task: TaskInfo, at: Date, except?: string,
): ClaimedAlert[] {
  if (lock.alerts.length === 0) return [];
  const out: ClaimedAlert[] = [];
  if (rules.alertOnOverwrite) {
    for (const c of unsentOverwrites(lock)) if (c.marker !== except) out.push({ marker: c.marker, event: overwriteEvent(key, c, lock, props, task, at) });
  }
  if (rules.alertOnFailure) {
    for (const c of carriedFailures(lock)) if (c.marker !== except) out.push({ marker: c.marker, event: carriedFailureEvent(key, c, props, task, at) });
  }
  return out;
}

function overwriteEvent(key: Key, c: OverwriteClaim, lock: Lock, props: Properties, task: TaskInfo, at: Date): AlertEvent {
  return alertEvent({
    reason: AlertReason.overwrite, key, seq: c.seq, retries: c.seq === lock.seq ? lock.tries : 0,
    previousAttempt: c.previous, newAttempt: c.next, task, properties: props, at,
  });
}

/** A failure alert carried past its step's end: its id is the first send's; its error text went with the step. */
function carriedFailureEvent(key: Key, c: FailureClaim, props: Properties, task: TaskInfo, at: Date): AlertEvent {
  return alertEvent({
    reason: AlertReason.failure, key, seq: c.seq, retries: 0, previousAttempt: c.failed, task, properties: props, at,
    error: new Error(`step ${c.seq} failed for good (attempt ${c.failed}) and its alert was not sent then; its error text was not kept once another step began on the entity`),
  });
}

/** What the sweep did with a record's unmarked overwrite alerts. */
export interface OverwriteResend {
  /** Alerts the alerter took (and marked sent). */
  sent: number;
  /** When to look again: the grace has not passed, or the alerter failed. */
  due?: number;
}

/**
 * The sweep's part: when nobody holds the lease and the lock carries overwrite alerts not marked
 * sent, sends them again once `alertGrace` passed since the lock's last write, and marks
 * them. While an attempt holds the lease (fresh or stale) it is left to it, or to whoever takes the
 * lease over from it: each sends what is unmarked when it takes the lease.
 */
export async function resendUnsentOverwrites(
  parts: ResendParts, record: LedgerRecord, props: Properties | undefined, lock: Lock | undefined, now: number,
): Promise<OverwriteResend | undefined> {
  if (!props || !lock || lock.req !== '') return undefined;
  const alerts = unsentOverwriteAlerts(parts.config, record.key, lock, props, { source: 'none', name: record.task }, lock.ts ?? new Date(now));
  if (alerts.length === 0) return undefined;
  const due = (lock.ts?.getTime() ?? 0) + alertGrace(parts.config);
  if (now < due) return { sent: 0, due };
  parts.config.logger.warn('overwrite alert sent again: it was claimed but never marked sent', {
    key: keyPath(record.key), seq: lock.seq, alerts: alerts.length,
  });
  const sent = await parts.alerts.sendAll(alerts);
  await parts.alerts.markSent(record.key, sent);
  return sent.length === alerts.length ? { sent: sent.length } : { sent: sent.length, due: now + alertGrace(parts.config) };
}

/**
 * The sweep's part: when the record's step failed for good and its alert is claimed but not marked
 * sent, sends it again (once the grace passed) and marks it. Resolves to `'sent'`, to the time to
 * look again (the grace has not passed, or the alerter failed again), or to undefined (nothing to send).
 */
export async function resendUnsentFailure(
  parts: ResendParts, record: LedgerRecord, props: Properties | undefined, lock: Lock | undefined, now: number,
): Promise<'sent' | number | undefined> {
  if (!props || !parts.config.alertOnFailure || !recordsFailedStep(lock, record)) return undefined;
  const due = (lock.ts?.getTime() ?? 0) + alertGrace(parts.config);
  let alerts = lock.alerts;
  let sent = false;
  // Usually one; more when the step failed again after an operator's retry while the first alert was still owed.
  for (let failed = unsentFailure(lock); failed !== undefined; failed = unsentFailure({ ...lock, alerts })) {
    if (now < due) return due;
    const event = alertEvent({
      reason: AlertReason.failure, key: record.key, seq: record.seq, retries: lock.tries, previousAttempt: failed,
      error: lock.err !== undefined ? new RecoveredError(lock.err) : undefined, task: { source: 'none', name: record.task },
      properties: props, at: lock.ts ?? new Date(now),
    });
    parts.config.logger.warn('failure alert sent again: it was claimed but never marked sent', { key: keyPath(record.key), seq: record.seq, attempt: failed });
    if (!(await parts.alerts.send(event))) return now + alertGrace(parts.config); // not after the failed record's 30 days: soon
    const marker = failureMarker(record.seq, failed);
    await parts.alerts.markSent(record.key, [marker]);
    alerts = markAlertsSent(alerts, record.seq, [marker]);
    sent = true;
  }
  return sent ? 'sent' : undefined;
}

/** The stored error of a failed step, as the alert shows it: the stored text is its message (and stack). */
class RecoveredError extends Error {
  constructor(stored: string) {
    super(stored.split('\n')[0] ?? stored);
    this.name = 'StoredError';
    this.stack = stored;
  }
}
