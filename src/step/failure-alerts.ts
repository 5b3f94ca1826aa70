/**
 * The alerts of a write that failed a step for good (the handler failed for the last time, or a
 * lease expired once too often), sent once the write is stored: one engine for both.
 */
import type { Key } from '@google-cloud/datastore';
import type { AlertSender } from '../alert/sender';
import type { ClaimedAlert } from '../alert/event';
import type { Ledger } from '../chain/ledger';
import { alertGrace, carriedAlerts, type AlertRules } from '../rules/alert-markers';
import type { Lock } from '../rules/lock-fields';

/** What sending a failure's alerts uses: the alert rules, the alert part and the ledger. */
export interface FailureAlertParts {
  readonly config: AlertRules;
  readonly alerts: AlertSender;
  readonly ledger: Ledger;
}

/**
 * Sends `alerts` (claimed by the failing write, `written`, stored at `at`) and marks sent on the
 * entity those the alerter took. A claim the lock still owes (the alerter did not take it, or one
 * carried from before) is the sweep's to send once the grace passed; the sweep finds it through
 * the step's ledger record, so that record comes due by then (a re-send's backoff may have put
 * it an hour out), as a finish, a cancel and the seal do. Never throws.
 */
export async function sendFailureAlerts(parts: FailureAlertParts, key: Key, written: Lock, alerts: readonly ClaimedAlert[], at: Date): Promise<void> {
  const taken = alerts.length > 0 ? await parts.alerts.sendAll(alerts) : [];
  await parts.alerts.markSent(key, taken);
  if (carriedAlerts(written, taken).length > 0) {
    await parts.ledger.keepForAlerts(key, written.task, new Date(at.getTime() + alertGrace(parts.config)));
  }
}
