/**
 * A failed attempt, written under the lease: the lease released for a retry (500), or the step
 * failed for good (200, alerted). The handler's changes are left out; the error is kept in
 * `lock_err`, shorter when the store refuses it whole.
 */
import type { SettingName, Settings } from '../config/settings';
import { ALERT_RULES, claimAlert, failureMarker, markAlertsSent } from '../rules/alert-markers';
import { sendFailureAlerts } from './failure-alerts';
import { alertEvent } from '../alert/event';
import { outcomes, type Outcome } from './outcome';
import type { Arrival } from './arrival';
import type { AlertSender } from '../alert/sender';
import type { Ledger } from '../chain/ledger';
import type { Emit } from '../events/emit';
import { afterFailure } from '../rules/decision';
import { PermanentError, StoreRejectedError } from '../errors/errors';
import { keyPath } from '../keys/key-codec';
import type { Lease } from './lease';
import { describeError, sameLock, type Lock } from '../rules/lock-fields';
import { TRUNCATED } from '../errors/error-text';
import { alerted, fail as failStep, release } from '../rules/transitions';
import { AlertReason, type Properties } from '../types';
import { scrubError, secretsOf } from '../alert/redact';

/** What a failed attempt reads of the configuration: the clock, the logger, the retries, the redaction, the alert rules. */
export const FAIL_SETTINGS = ['clock', 'logger', 'maxRetries', 'redact', ...ALERT_RULES] as const satisfies readonly SettingName[];
export type FailSettings = Settings<typeof FAIL_SETTINGS>;

/** The parts a failed attempt writes and reports through, with its settings. */
export interface FailParts {
  readonly config: FailSettings;
  readonly emit: Emit;
  readonly alerts: AlertSender;
  readonly ledger: Ledger;
}

/**
 * The handler threw (or the store refused the step's changes): release the lease for a retry
 * (500), or fail the step for good (200). A lost lease is thrown as `LeaseLostError`.
 */
export async function failAttempt(parts: FailParts, a: Arrival, lease: Lease, error: unknown): Promise<Outcome> {
  let outcome: FailOutcome;
  const sent = await lease.sentAlerts(); // an overwrite's alerts, sent while the handler ran: this write marks them
  try {
    outcome = await writeFailure(parts, lease, error, describeError(error), sent);
  } catch (writeError) {
    if (!(writeError instanceof StoreRejectedError)) throw writeError;
    // The entity as stored, with this error beside it, is more than the store takes: store less of the error.
    outcome = await writeFailure(parts, lease, error, shortError(error), sent);
  }
  // What is told (log, events) keeps the entity's redacted values out of the error; the alert is redacted where it is sent.
  const told = scrubError(error, secretsOf(outcome.props, parts.config.redact));
  const fields = { key: keyPath(a.key), seq: a.seq, attempt: a.attempt, retries: outcome.lock.tries, error: told instanceof Error ? told.message : String(told) };
  if (outcome.verdict === 'release') {
    parts.emit('released', { key: a.key, seq: a.seq, attempt: a.attempt, retries: outcome.lock.tries, error: told });
    parts.config.logger.warn('handler failed; the step will be retried', fields);
    return outcomes.released(a.seq, outcome.lock.tries, parts.config.maxRetries);
  }
  // The step's ledger record stays (its path and payload) for locker.retry(); see stall.ts.
  parts.emit('failed', { key: a.key, seq: a.seq, attempt: a.attempt, retries: outcome.lock.tries, error: told });
  parts.config.logger.error('step failed for good', fields);
  // Sent, then its claim marked sent on the entity; one still owed is the sweep's (failure-alerts.ts).
  await sendFailureAlerts(parts, a.key, outcome.lock, outcome.alerts ? [{ marker: failureMarker(a.seq, a.attempt), event: alertEvent({
    reason: AlertReason.failure, key: a.key, seq: a.seq, retries: outcome.lock.tries, previousAttempt: a.attempt,
    error, task: a.task, properties: outcome.props, at: outcome.at,
  }) }] : [], outcome.at);
  return outcomes.failed(a.seq, outcome.lock.tries);
}

interface FailOutcome { verdict: 'release' | 'fail'; alerts: string[] | undefined; props: Properties; at: Date; lock: Lock }

/** Writes a failed attempt (`release`, or `fail` for good) on the stored entity, the handler's changes left out; settled under the lease. */
async function writeFailure(parts: FailParts, lease: Lease, error: unknown, err: string, sent: readonly string[]): Promise<FailOutcome> {
  const now = new Date(parts.config.clock());
  let decided: FailOutcome | undefined;
  let intended: Lock | undefined;
  await lease.settle('release', () => lease.update((lock, props) => {
    const verdict = afterFailure(lock, parts.config.maxRetries, error instanceof PermanentError);
    const alerts = verdict === 'fail' ? claimAlert(parts.config, lock, { failed: lease.attempt }) : undefined;
    intended = verdict === 'fail' ? failStep(lock, { now, error: err, alerts }) : release(lock, { now, error: err });
    if (sent.length > 0) intended = alerted(intended, { alerts: markAlertsSent(intended.alerts, intended.seq, sent) });
    decided = { verdict, alerts, props, at: now, lock: intended };
    return intended;
  }, (lock) => (intended && sameLock(lock, intended) ? true : undefined)));
  return decided!;
}

/** An error in a few hundred characters: its name and the start of its message. */
function shortError(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > 500 ? `${text.slice(0, 500 - TRUNCATED.length)}${TRUNCATED}` : text;
}
