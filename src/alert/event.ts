/**
 * An alert's event: what it says, and its stable `id` (the same event always gets the same id, so
 * an alert sent twice is recognisably one). Sending is the alerts part's (`alert/sender.ts`),
 * bounded in time; it never changes a task's outcome.
 */
import { createHash } from 'node:crypto';
import type { Key } from '@google-cloud/datastore';
import { keyPath } from '../keys/key-codec';
import { userProperties } from '../rules/lock-fields';
import type { AlertEvent, AlertReason, Properties, TaskInfo } from '../types';

/**
 * The stable id of an alert: the same event always gets the same id (an overwrite is named by the
 * lease it took over, a failure by the attempt that failed), whoever sends it. Use it to recognise
 * an alert sent twice (`EmailAlerter` makes it the message's `Message-ID`).
 */
export function alertId(reason: AlertReason, key: Key, seq: number, attempt: string | undefined): string {
  const what = JSON.stringify([key.namespace ?? '', keyPath(key), seq, reason, attempt ?? '']);
  return createHash('sha256').update(what).digest('hex').slice(0, 32);
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
    id: alertId(f.reason, f.key, f.seq, f.previousAttempt),
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

/** An alert to send, with the marker that claimed it. */
export interface ClaimedAlert {
  marker: string;
  event: AlertEvent;
}
