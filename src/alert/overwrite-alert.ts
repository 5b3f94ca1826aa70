/**
 * An overwrite's alert, sent at least once with nothing of it owed after the answer. The write
 * that takes a lease over claims the alert (a marker in `lock_alerts`). The attempt that took the
 * lease sends it concurrently with its handler, and with it every overwrite alert of the lock not
 * yet marked sent (an earlier holder's, which may have died before sending); before the step's
 * last write it waits for them (each bounded by `alertTimeout`), and that write marks the ones the
 * alerter took, at no extra round trip. A write that ends the step keeps the unsent ones
 * (`carriedAlerts`) and keeps a ledger record due within the grace, so the sweep finds them; the
 * next attempt that takes the lease, or the sweep once nobody holds it, sends them again under the
 * same id and marks them.
 */
import type { Key } from '@google-cloud/datastore';
import { carriedAlerts, carriedFailures, unsentOverwrites, type FailureClaim, type OverwriteClaim } from '../rules/alert-markers';
import { alertEvent, type ClaimedAlert } from './event';
import type { Arrival } from '../http/arrival';
import type { Parts } from '../parts';
import { keyPath } from '../store/key-codec';
import type { Lock } from '../rules/lock-fields';
import { alerted } from '../rules/transitions';
import { AlertReason, type AlertEvent, type LedgerRecord, type Properties, type TaskInfo } from '../types';

/** The sends each attempt started when it took its lease, resolving to the markers the alerter took. */
const sending = new WeakMap<Arrival, Promise<string[]>>();

/** No alert sent: what an attempt that started none reports. */
export const NO_ALERTS: readonly string[] = Object.freeze([]);

/**
 * Starts sending `alerts` for the attempt `a` that took the lease, without waiting (the handler
 * runs meanwhile); the step's last write waits for them (`sentByAttempt`).
 */
export function startAlerts(parts: Pick<Parts, 'alerts'>, a: Arrival, alerts: readonly ClaimedAlert[]): void {
  if (alerts.length > 0) sending.set(a, parts.alerts.sendAll(alerts));
}

/**
 * The markers of the alerts attempt `a` started that the alerter took: undefined at once (no
 * await) when it started none, the usual case; else a promise that settles within `alertTimeout`.
 */
export function sentByAttempt(a: Arrival): Promise<string[]> | undefined {
  return sending.get(a);
}

/**
 * The events of the lock's claims still unmarked that whoever takes the lease, or the sweep, sends:
 * its overwrite alerts, and the failure alerts a step's end carried over (a kickoff after a failed
 * step whose alert was not sent), less `except` (a marker the caller sends with richer facts).
 * Their ids are those of the first send: an id names the step and the attempt, nothing else.
 */
export function unsentOverwriteAlerts(
  parts: Pick<Parts, 'config'>, key: Key, lock: Lock, props: Properties, task: TaskInfo, at: Date, except?: string,
): ClaimedAlert[] {
  if (!parts.config.alerter || lock.alerts.length === 0) return [];
  const out: ClaimedAlert[] = [];
  if (parts.config.alertOnOverwrite) {
    for (const c of unsentOverwrites(lock)) if (c.marker !== except) out.push({ marker: c.marker, event: overwriteEvent(key, c, lock, props, task, at) });
  }
  if (parts.config.alertOnFailure) {
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

/** How long after the last write of a lock nobody holds the sweep sends its unmarked overwrite alerts again. */
export function overwriteAlertGrace(parts: Pick<Parts, 'config'>): number {
  return 2 * parts.config.alertTimeout;
}

/**
 * A write that ends step `before.seq` (`finish`, `schedule`, `kickoff`, `retry`: each clears
 * `lock_alerts`) keeps the claims still unmarked (overwrite alerts, and failure alerts: a kickoff
 * after a failure whose alert was not sent), less the writer's `sent` (none when overwrite alerts
 * are off); when it keeps any, its ledger `record` (if given) comes due within the grace, so the
 * sweep looks soon. Unchanged in the usual case: the lock had no alerts.
 */
export function endStepAlerts<R extends { lock: Lock; record?: LedgerRecord }>(
  parts: Pick<Parts, 'config'>, ended: R, before: Lock, sent: readonly string[], now: Date,
): R {
  if (before.alerts.length === 0) return ended;
  // Alerts of a reason that is off would be sent by nobody: the step's end drops them.
  const { alerter, alertOnOverwrite, alertOnFailure } = parts.config;
  if (!alerter || (!alertOnOverwrite && !alertOnFailure)) return ended;
  const kept = carriedAlerts(before, sent, { overwrite: alertOnOverwrite, failure: alertOnFailure });
  if (kept.length === 0) return ended;
  const out = { ...ended, lock: alerted(ended.lock, { alerts: kept }) };
  const soon = now.getTime() + overwriteAlertGrace(parts);
  if (out.record && out.record.due.getTime() > soon) out.record = { ...out.record, due: new Date(soon) };
  return out;
}

/**
 * Keeps the ledger record `id` of a chain that finished with overwrite alerts still unmarked (its
 * finishing write kept them), due within the grace, so that the sweep sends them; never throws.
 */
export async function keepRecordForAlerts(parts: Pick<Parts, 'config' | 'locks'>, key: Key, id: string | undefined, now: Date): Promise<void> {
  if (id === undefined) return;
  const soon = new Date(now.getTime() + overwriteAlertGrace(parts));
  try {
    await parts.locks.transact(async (tx) => {
      const record = await tx.getLedger(key, id);
      if (record && record.due.getTime() > soon.getTime()) tx.putLedger({ ...record, due: soon });
    });
  } catch (error) {
    parts.config.logger.warn('ledger record of a step with unsent alerts not brought forward; the sweep sends them when it comes due', {
      key: keyPath(key), task: id, error: error instanceof Error ? error.message : String(error),
    });
  }
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
 * sent, sends them again once `overwriteAlertGrace` passed since the lock's last write, and marks
 * them. While an attempt holds the lease (fresh or stale) it is left to it, or to whoever takes the
 * lease over from it: each sends what is unmarked when it takes the lease.
 */
export async function resendUnsentOverwrites(
  parts: Pick<Parts, 'config' | 'alerts'>, record: LedgerRecord, props: Properties | undefined, lock: Lock | undefined, now: number,
): Promise<OverwriteResend | undefined> {
  if (!props || !lock || lock.req !== '') return undefined;
  const alerts = unsentOverwriteAlerts(parts, record.key, lock, props, { source: 'none', name: record.task }, lock.ts ?? new Date(now));
  if (alerts.length === 0) return undefined;
  const due = (lock.ts?.getTime() ?? 0) + overwriteAlertGrace(parts);
  if (now < due) return { sent: 0, due };
  parts.config.logger.warn('overwrite alert sent again: it was claimed but never marked sent', {
    key: keyPath(record.key), seq: lock.seq, alerts: alerts.length,
  });
  const sent = await parts.alerts.sendAll(alerts);
  await parts.alerts.markSent(record.key, sent);
  return sent.length === alerts.length ? { sent: sent.length } : { sent: sent.length, due: now + overwriteAlertGrace(parts) };
}
