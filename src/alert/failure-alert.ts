/**
 * A failure's alert, sent at least once. The write that fails the step claims the alert (a marker
 * naming the failed attempt in `lock_alerts`); the process that wrote it sends the alert and then
 * marks the claim sent. A claim still unmarked a while later (the process died in between, or the
 * alerter failed) is sent again by the sweep, under the same id, and marked then.
 */
import { failureMarker, markAlertsSent, unsentFailure } from '../rules/alert-markers';
import { alertEvent } from './event';
import type { Parts } from '../parts';
import { keyPath } from '../store/key-codec';
import type { Lock } from '../rules/lock-fields';
import { recordsFailedStep } from '../rules/stall';
import { AlertReason, type LedgerRecord, type Properties } from '../types';

/**
 * How long after a step failed the sweep sends again a failure alert still not marked sent: the
 * failing process had two alert timeouts to send it and mark it.
 */
export function failureAlertGrace(parts: Pick<Parts, 'config'>): number {
  return 2 * parts.config.alertTimeout;
}

/**
 * The sweep's part: when the record's step failed for good and its alert is claimed but not marked
 * sent, sends it again (once the grace passed) and marks it. Resolves to `'sent'`, to the time to
 * look again (the grace has not passed, or the alerter failed again), or to undefined (nothing to send).
 */
export async function resendUnsentFailure(
  parts: Pick<Parts, 'config' | 'alerts'>, record: LedgerRecord, props: Properties | undefined, lock: Lock | undefined, now: number,
): Promise<'sent' | number | undefined> {
  if (!props || !parts.config.alerter || !parts.config.alertOnFailure || !recordsFailedStep(lock, record)) return undefined;
  const due = (lock.ts?.getTime() ?? 0) + failureAlertGrace(parts);
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
    if (!(await parts.alerts.send(event))) return now + failureAlertGrace(parts); // not after the failed record's 30 days: soon
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
