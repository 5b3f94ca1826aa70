/**
 * The Locker's side of alerting: each (key, step, reason) is alerted at most once, also across
 * instances, by recording the alert on the entity in the same transaction that records the event;
 * sending is bounded in time and never changes a task's outcome.
 */
import { errorMessage } from './error-text';
import type { Key } from '@google-cloud/datastore';
import type { Config } from './options';
import { keyPath } from './key-codec';
import { withOrigin } from './alert/origin';
import type { Lock } from './lock-fields';
import { userProperties } from './lock-fields';
import type { AlertEvent, AlertReason, Properties, TaskInfo } from './types';

/**
 * Claims the alert for `reason` on step `lock.seq`: returns the lock's new alert list when this
 * event should be alerted (record it with the event), or undefined when it was alerted before or
 * alerts of that reason are off. Markers of earlier steps are dropped, so the list stays short.
 */
export function claimAlert(config: Config, lock: Lock, reason: AlertReason): string[] | undefined {
  const enabled = reason === 'overwrite' ? config.alertOnOverwrite : config.alertOnFailure;
  if (!config.alerter || !enabled) return undefined;
  const marker = `${reason}:${lock.seq}`;
  if (lock.alerts.includes(marker)) return undefined;
  return [...lock.alerts.filter((a) => a.endsWith(`:${lock.seq}`)), marker];
}

/** The facts of an alert, gathered where the event happened. */
export interface AlertFacts {
  reason: AlertReason;
  key: Key;
  seq: number;
  retries: number;
  previousAttempt?: string;
  newAttempt?: string;
  leaseAgeMs?: number;
  error?: unknown;
  task: TaskInfo;
  properties: Properties;
  at: Date;
}

/** Builds the event an alerter is given. */
export function alertEvent(f: AlertFacts): AlertEvent {
  const event: AlertEvent = {
    reason: f.reason,
    key: f.key,
    kind: f.key.kind,
    keyPath: keyPath(f.key),
    seq: f.seq,
    retries: f.retries,
    task: f.task,
    properties: userProperties(f.properties),
    at: f.at,
  };
  if (f.key.namespace) event.namespace = f.key.namespace;
  if (f.previousAttempt) event.previousAttempt = f.previousAttempt;
  if (f.newAttempt) event.newAttempt = f.newAttempt;
  if (f.leaseAgeMs !== undefined && Number.isFinite(f.leaseAgeMs)) event.leaseAgeMs = f.leaseAgeMs;
  if (f.error !== undefined) {
    event.error = f.error instanceof Error
      ? { message: f.error.message, ...(f.error.stack ? { stack: f.error.stack } : {}) }
      : { message: String(f.error) };
  }
  return event;
}

/** Sends an alert through the configured alerter within `alertTimeout`; logs and swallows failures. */
export async function sendAlert(config: Config, raw: AlertEvent): Promise<void> {
  const alerter = config.alerter;
  if (!alerter) return;
  const event = withOrigin(config, raw);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the alerter did not finish within ${config.alertTimeout} ms`)), config.alertTimeout);
    timer.unref();
  });
  try {
    const sending = Promise.resolve().then(() => (typeof alerter === 'function' ? alerter(event) : alerter.send(event)));
    await Promise.race([sending, timeout]);
    config.logger.info('alert sent', { reason: event.reason, key: event.keyPath, seq: event.seq });
  } catch (error) {
    config.logger.error('alert could not be sent', {
      reason: event.reason,
      key: event.keyPath,
      seq: event.seq,
      error: errorMessage(error),
      cause: error instanceof Error && error.cause !== undefined ? String(error.cause) : undefined,
    });
  } finally {
    clearTimeout(timer);
  }
}
