/**
 * The Locker's side of alerting. Every overwrite of a lease is alerted, and a step's failure for
 * good once: the alert is claimed on the entity in the same write that records the event (a
 * marker in `lock_alerts`), then sent, then marked sent (`:sent`) once the alerter took it. Each
 * alert has a stable `id` (the same event always gets the same id), so an alert sent twice is
 * recognisably one. A claim still unmarked is sent again: an overwrite's by the next attempt that
 * takes the lease or by the sweep (`overwrite-alert.ts`), a failure's by the sweep
 * (`failure-alert.ts`). Sending is bounded in time and never changes a task's outcome.
 */
import { createHash } from 'node:crypto';
import { errorMessage } from '../errors/error-text';
import type { Key } from '@google-cloud/datastore';
import type { Config } from '../config/options';
import { keyPath } from '../store/key-codec';
import { withOrigin } from './origin';
import type { Lock } from '../rules/lock-fields';
import { userProperties } from '../rules/lock-fields';
import type { AlertEvent, AlertReason, Properties, TaskInfo } from '../types';

/** Who took a lease over: the attempt that held it (`previous`) and the one that took it (`next`). */
export interface Takeover {
  previous: string;
  next: string;
}

/**
 * Claims the alert of an overwrite (`who` is the takeover) or of a failure (`who` names the attempt
 * that failed, or whose lease expired) on step `lock.seq`: returns the lock's new alert list when
 * this event should be alerted (record it with the event), or undefined when alerts of that reason
 * are off or (a failure) it was alerted before. Every overwrite is its own alert, named by who was
 * overwritten and who took over. Markers of earlier steps are dropped, so the list stays short,
 * except overwrite alerts not yet marked sent: they are kept until someone sends them.
 */
export function claimAlert(config: Config, lock: Lock, who: Takeover | { failed: string }): string[] | undefined {
  const failure = 'failed' in who;
  if (!config.alerter || !(failure ? config.alertOnFailure : config.alertOnOverwrite)) return undefined;
  const prefix = failurePrefix(lock.seq);
  if (failure && lock.alerts.some((a) => a === prefix.slice(0, -1) || a.startsWith(prefix))) return undefined;
  const marker = failure ? `${prefix}${who.failed}` : `overwrite:${lock.seq}:${who.previous}:${who.next}`;
  if (lock.alerts.includes(marker)) return undefined;
  return [...lock.alerts.filter((a) => markerSeq(a) === lock.seq || isUnsentOverwrite(a)), marker];
}

/** The start of every failure marker of step `seq` after the bare one older versions wrote (`failure:<seq>`). */
function failurePrefix(seq: number): string {
  return `failure:${seq}:`;
}

/** What marks a failure alert as sent: the claim's marker with this suffix. */
const SENT = ':sent';

/**
 * The failure alert of step `lock.seq` that was claimed but is not known to be sent: the attempt
 * that failed, or undefined. Its sender marks it sent once the alerter took it (`markAlertsSent`); one
 * still unmarked (the process died in between, or the alerter failed) is sent again by the sweep.
 */
export function unsentFailure(lock: Lock): string | undefined {
  const prefix = failurePrefix(lock.seq);
  const marker = lock.alerts.find((a) => a.startsWith(prefix));
  if (!marker || marker.endsWith(SENT)) return undefined;
  return marker.slice(prefix.length);
}

/** An overwrite alert claimed on an entity: the step, who was overwritten and who took over, and its marker. */
export interface OverwriteClaim extends Takeover {
  seq: number;
  marker: string;
}

/** The overwrite claim a marker (`overwrite:<seq>:<previous>:<next>`) is, or undefined when it is none or is marked sent. */
export function unsentOverwrite(marker: string): OverwriteClaim | undefined {
  if (!marker.startsWith('overwrite:') || marker.endsWith(SENT)) return undefined;
  const [, seqText, ...rest] = marker.split(':');
  // `next` is this library's attempt id (a UUID, no colon); `previous` may be anyone's, Go's too.
  const joined = rest.join(':');
  const cut = joined.lastIndexOf(':');
  const seq = Number(seqText);
  if (!Number.isSafeInteger(seq) || cut <= 0 || cut >= joined.length - 1) return undefined;
  return { seq, previous: joined.slice(0, cut), next: joined.slice(cut + 1), marker };
}

function isUnsentOverwrite(marker: string): boolean {
  return unsentOverwrite(marker) !== undefined;
}

/**
 * The overwrite alerts claimed on the lock and not marked sent, of its step and of earlier ones
 * (a finishing write keeps those: `carriedAlerts`). Whoever sends them marks them (`markAlertsSent`).
 */
export function unsentOverwrites(lock: Lock): OverwriteClaim[] {
  const out: OverwriteClaim[] = [];
  for (const marker of lock.alerts) {
    const claim = unsentOverwrite(marker);
    if (claim) out.push(claim);
  }
  return out;
}

/**
 * The alert list with the markers in `sent` marked sent: a marker of step `seq` gets `:sent` (it
 * stays, so the step's page shows it and it is never claimed twice), one of an earlier step is
 * dropped (only its being unsent kept it).
 */
export function markAlertsSent(alerts: readonly string[], seq: number, sent: readonly string[]): string[] {
  const out: string[] = [];
  for (const a of alerts) {
    if (!sent.includes(a) || a.endsWith(SENT)) out.push(a);
    else if (markerSeq(a) === seq) out.push(`${a}${SENT}`);
  }
  return out;
}

/**
 * What a write that ends the step (`finish`, `schedule`, a kickoff) keeps of the lock's alerts:
 * the overwrite alerts not yet marked sent, less those in `sent` (the writer's own sends, which the
 * alerter took). Empty in the usual case: the step ends with no alert owed.
 */
export function carriedAlerts(lock: Lock, sent: readonly string[]): string[] {
  return unsentOverwrites(lock).map((c) => c.marker).filter((m) => !sent.includes(m));
}

/** The step a marker (`reason:seq[:…]`) belongs to. */
function markerSeq(marker: string): number {
  return Number(marker.split(':')[1]);
}

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

/** The marker a failure's claim wrote (`claimAlert`): step `seq`, the attempt that failed. */
export function failureMarker(seq: number, failed: string): string {
  return `failure:${seq}:${failed}`;
}

/** Sends an alert through the configured alerter within `alertTimeout`; logs and swallows failures. Resolves to whether the alerter took it. */
export async function sendAlert(config: Config, raw: AlertEvent): Promise<boolean> {
  const alerter = config.alerter;
  if (!alerter) return false;
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
    return true;
  } catch (error) {
    config.logger.error('alert could not be sent', {
      reason: event.reason,
      key: event.keyPath,
      seq: event.seq,
      error: errorMessage(error),
      cause: error instanceof Error && error.cause !== undefined ? String(error.cause) : undefined,
    });
    return false;
  } finally {
    clearTimeout(timer);
  }
}
