/**
 * A failure's alert, sent at least once. The write that fails the step claims the alert (a marker
 * naming the failed attempt in `lock_alerts`); the process that wrote it sends the alert and then
 * marks the claim sent. A claim still unmarked a while later (the process died in between, or the
 * alerter failed) is sent again by the sweep, under the same id, and marked then.
 */
import { alertEvent, markedSent, unsentFailure } from './alerts';
import type { Core } from './core';
import { ContentionError } from './errors';
import { keyPath } from './key-codec';
import { readLock, writeLock, type Lock } from './lock-fields';
import { recordsFailedStep } from './stall';
import { withContentionRetry } from './store/retry';
import { AlertReason, StepState, type AlertEvent, type LedgerRecord, type Properties } from './types';

/** Sends a failure's alert, then marks its claim on the entity sent; never throws. */
export async function sendFailureAlert(core: Core, event: AlertEvent): Promise<void> {
  if (await core.alert(event)) await markFailureAlertSent(core, event);
}

/**
 * How long after a step failed the sweep sends again a failure alert still not marked sent: the
 * failing process had two alert timeouts to send it and mark it.
 */
export function failureAlertGrace(core: Core): number {
  return 2 * core.config.alertTimeout;
}

/**
 * The sweep's part: when the record's step failed for good and its alert is claimed but not marked
 * sent, sends it again (once the grace passed) and marks it. Resolves to `'sent'`, to the time to
 * look again (the grace has not passed), or to undefined (nothing to send).
 */
export async function resendUnsentFailure(
  core: Core, record: LedgerRecord, props: Properties | undefined, lock: Lock | undefined, now: number,
): Promise<'sent' | number | undefined> {
  if (!props || !core.config.alerter || !core.config.alertOnFailure || !recordsFailedStep(lock, record)) return undefined;
  const failed = unsentFailure(lock);
  if (failed === undefined) return undefined;
  const due = (lock.ts?.getTime() ?? 0) + failureAlertGrace(core);
  if (now < due) return due;
  const event = alertEvent({
    reason: AlertReason.failure, key: record.key, seq: record.seq, retries: lock.tries, previousAttempt: failed,
    error: lock.err !== undefined ? new RecoveredError(lock.err) : undefined, task: { source: 'none', name: record.task },
    properties: props, at: lock.ts ?? new Date(now),
  });
  core.config.logger.warn('failure alert sent again: it was claimed but never marked sent', { key: keyPath(record.key), seq: record.seq, attempt: failed });
  if (!(await core.alert(event))) return undefined;
  await markFailureAlertSent(core, event);
  return 'sent';
}

/** Marks the step's failure alert sent (a compare-and-swap; the lock's time and everything else are kept). */
async function markFailureAlertSent(core: Core, event: AlertEvent): Promise<void> {
  const { store } = core.config;
  try {
    await withContentionRetry(async () => {
      const snapshot = await store.read(event.key);
      if (!snapshot) return;
      const lock = readLock(snapshot.properties);
      if (lock.seq !== event.seq || lock.state !== StepState.failed || unsentFailure(lock) === undefined) return;
      const written = await core.replace(event.key, snapshot, writeLock(snapshot.properties, { ...lock, alerts: markedSent(lock) }));
      if (!written) throw new ContentionError(`${keyPath(event.key)} changed while its failure alert was marked sent`);
    }, core.config.contention);
  } catch (error) {
    core.config.logger.warn('failure alert sent but not marked sent; the sweep may send it again (same id)', {
      key: keyPath(event.key), seq: event.seq, error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** The stored error of a failed step, as the alert shows it: the stored text is its message (and stack). */
class RecoveredError extends Error {
  constructor(stored: string) {
    super(stored.split('\n')[0] ?? stored);
    this.name = 'StoredError';
    this.stack = stored;
  }
}
