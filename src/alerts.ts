/**
 * The Locker's side of alerting. Every overwrite of a lease is alerted, and a step's failure for
 * good once: the alert is claimed on the entity in the same write that records the event (a
 * marker in `lock_alerts`), then sent. Each alert has a stable `id` (the same event always gets
 * the same id), so an alert sent twice is recognisably one: the attempt that takes over a lease
 * re-sends the overwrite alerts its holder (and the attempts that held it just before, each taken
 * over in turn) claimed, which they may have died before sending.
 * Sending is bounded in time and never changes a task's outcome.
 */
import { createHash } from 'node:crypto';
import { errorMessage } from './error-text';
import type { Key } from '@google-cloud/datastore';
import type { Config } from './options';
import { keyPath } from './key-codec';
import { withOrigin } from './alert/origin';
import type { Lock } from './lock-fields';
import { userProperties } from './lock-fields';
import type { AlertEvent, AlertReason, Properties, TaskInfo } from './types';

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
 * overwritten and who took over. Markers of earlier steps are dropped, so the list stays short.
 */
export function claimAlert(config: Config, lock: Lock, who: Takeover | { failed: string }): string[] | undefined {
  const failure = 'failed' in who;
  if (!config.alerter || !(failure ? config.alertOnFailure : config.alertOnOverwrite)) return undefined;
  const prefix = failurePrefix(lock.seq);
  if (failure && lock.alerts.some((a) => a === prefix.slice(0, -1) || a.startsWith(prefix))) return undefined;
  const marker = failure ? `${prefix}${who.failed}` : `overwrite:${lock.seq}:${who.previous}:${who.next}`;
  if (lock.alerts.includes(marker)) return undefined;
  return [...lock.alerts.filter((a) => markerSeq(a) === lock.seq), marker];
}

/** The start of every failure marker of step `seq` after the bare one older versions wrote (`failure:<seq>`). */
function failurePrefix(seq: number): string {
  return `failure:${seq}:`;
}

/** What marks a failure alert as sent: the claim's marker with this suffix. */
const SENT = ':sent';

/**
 * The failure alert of step `lock.seq` that was claimed but is not known to be sent: the attempt
 * that failed, or undefined. Its sender marks it sent once the alerter took it (`markedSent`); one
 * still unmarked (the process died in between, or the alerter failed) is sent again by the sweep.
 */
export function unsentFailure(lock: Lock): string | undefined {
  const prefix = failurePrefix(lock.seq);
  const marker = lock.alerts.find((a) => a.startsWith(prefix));
  if (!marker || marker.endsWith(SENT)) return undefined;
  return marker.slice(prefix.length);
}

/** The lock's alerts with the failure alert of its step marked sent (unchanged when there is none to mark). */
export function markedSent(lock: Lock): string[] {
  const prefix = failurePrefix(lock.seq);
  return lock.alerts.map((a) => (a.startsWith(prefix) && !a.endsWith(SENT) ? `${a}${SENT}` : a));
}

/**
 * The overwrite alerts the lease's current holder may have been the last to be able to send: the
 * one it claimed when it took the lease over, and, when the attempt it took the lease from had
 * itself taken it over, that one's, and so on back along the run of consecutive takeovers (each
 * of those attempts lost its lease, so each may have died before sending). Whoever takes the lease
 * from the holder sends them again, with their ids: an alerter may see an alert twice, never none.
 * Newest first.
 */
export function holderTakeovers(lock: Lock): Takeover[] {
  const prefix = `overwrite:${lock.seq}:`;
  const takeovers = new Map<string, string>(); // next → previous
  for (const marker of lock.alerts) {
    if (!marker.startsWith(prefix)) continue;
    // `next` is this library's attempt id (a UUID, no colon); `previous` may be anyone's, Go's too.
    const rest = marker.slice(prefix.length);
    const cut = rest.lastIndexOf(':');
    if (cut > 0 && cut < rest.length - 1) takeovers.set(rest.slice(cut + 1), rest.slice(0, cut));
  }
  const run: Takeover[] = [];
  for (let holder = lock.req; holder !== '' && run.length < takeovers.size;) {
    const previous = takeovers.get(holder);
    if (previous === undefined) break;
    run.push({ previous, next: holder });
    holder = previous;
  }
  return run;
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
