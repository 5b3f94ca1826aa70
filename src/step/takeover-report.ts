/**
 * Reporting a stale lease taken over (`overwrite`) or ended (`expire`) by an arriving attempt: the
 * event, the log line, and the alerts it claimed (with any other of the lock still unmarked).
 */
import { failureMarker } from '../rules/alert-markers';
import { alertEvent, type ClaimedAlert } from '../alert/event';
import { unsentOverwriteAlerts } from '../alert/resend';
import type { Arrival } from './arrival';
import type { AlertSender } from '../alert/sender';
import type { Ledger } from '../chain/ledger';
import { sendFailureAlerts } from './failure-alerts';
import type { Config } from '../config/options';
import type { Emit } from '../events/emit';
import type { AlertRules } from '../rules/alert-markers';
import type { Decision } from '../rules/decision';
import { keyPath } from '../keys/key-codec';
import { readLock, type Lock } from '../rules/lock-fields';
import { AlertReason, type Properties } from '../types';

/** What reporting a takeover uses: the alert rules and the logger, the events port, the alert part, the ledger. */
export interface TakeoverParts {
  readonly config: AlertRules & Pick<Config, 'logger'>;
  readonly emit: Emit;
  readonly alerts: AlertSender;
  readonly ledger: Ledger;
}

/**
 * Starts sending `alerts` for the attempt that took the lease, without waiting (the handler runs
 * meanwhile): resolves to the markers the alerter took; undefined when there are none (the usual case).
 */
export function startAlerts(parts: Pick<TakeoverParts, 'alerts'>, alerts: readonly ClaimedAlert[]): Promise<string[]> | undefined {
  return alerts.length > 0 ? parts.alerts.sendAll(alerts) : undefined;
}

/**
 * Reports a stale lease taken over (`overwrite`) or ended (`expire`): event, log line and the
 * alerts. An overwrite's alert, this takeover's and any other of the lock still unmarked (an
 * earlier holder may have died before sending its own), is sent while the handler runs; the
 * step's last write waits for it (the lease carries it) and marks it sent. An expiry answers at
 * once, so its alerts are sent and marked before the answer (`sendFailureAlerts`: a claim left
 * owed brings the step's record due within the grace). Resolves to the sends an overwrite
 * started (the lease carries them).
 */
export async function reportTakeover(
  parts: TakeoverParts, a: Arrival, d: Extract<Decision, { action: 'overwrite' | 'expire' }>, props: Properties, written: Lock, claimed: boolean, now: Date,
): Promise<{ sending: Promise<string[]> | undefined }> {
  const lock = readLock(props);
  const retries = lock.tries + 1;
  const where = { key: keyPath(a.key), seq: a.seq, previous: d.previous };
  let error: Error | undefined;
  if (d.action === 'overwrite') {
    parts.emit('overwritten', { key: a.key, seq: a.seq, attempt: a.attempt, previous: d.previous, leaseAgeMs: d.leaseAgeMs });
    parts.config.logger.warn('stale lease overwritten', { ...where, attempt: a.attempt, leaseAgeMs: d.leaseAgeMs });
  } else {
    error = new Error(`the lease of attempt ${d.previous} expired and the step has no attempts left`);
    parts.emit('failed', { key: a.key, seq: a.seq, attempt: a.attempt, retries, error });
    parts.config.logger.error('step failed: its lease expired too often', { ...where, retries });
  }
  const own = d.action === 'overwrite' ? `overwrite:${written.seq}:${d.previous}:${a.attempt}` : failureMarker(written.seq, d.previous);
  const alerts: ClaimedAlert[] = [];
  if (claimed) {
    alerts.push({ marker: own, event: alertEvent({
      reason: d.action === 'overwrite' ? AlertReason.overwrite : AlertReason.failure,
      key: a.key, seq: a.seq, retries, previousAttempt: d.previous, newAttempt: d.action === 'overwrite' ? a.attempt : undefined,
      leaseAgeMs: d.leaseAgeMs, task: a.task, properties: props, at: now, error,
    }) });
  }
  alerts.push(...unsentOverwriteAlerts(parts.config, a.key, written, props, a.task, now, own));
  if (d.action === 'overwrite') return { sending: startAlerts(parts, alerts) };
  await sendFailureAlerts(parts, a.key, written, alerts, now);
  return { sending: undefined };
}

