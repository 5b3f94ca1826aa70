/**
 * Alert markers, as pure functions (docs/design.md, section 15): every overwrite of a lease is
 * alerted, and a step's failure for good once. The alert is claimed on the entity in the same write
 * that records the event (a marker in `lock_alerts`), then sent, then marked sent (`:sent`) once the
 * alerter took it (the `alerted` transition). A claim still unmarked is sent again: an overwrite's
 * by the next attempt that takes the lease or by the sweep, a failure's by the sweep
 * (`alert/resend.ts`). A write that ends a step keeps the claims still unsent (`endStepAlerts`).
 */
import type { Lock } from './lock-fields';
import { alerted } from './transitions';
import type { LedgerRecord } from '../types';

/** The alert settings the marker rules read: which reasons are alerted (false for both without an alerter), and the alerter's time. */
export interface AlertRules {
  readonly alertOnOverwrite: boolean;
  readonly alertOnFailure: boolean;
  readonly alertTimeout: number;
}

/** The names of {@link AlertRules}: the settings a part that applies the rules is built with. */
export const ALERT_RULES = ['alertOnOverwrite', 'alertOnFailure', 'alertTimeout'] as const satisfies ReadonlyArray<keyof AlertRules>;

/** No alert sent: what an attempt that started none reports. */
export const NO_ALERTS: readonly string[] = Object.freeze([]);

/**
 * How long after the last write of a lock nobody holds (or after a step failed) the sweep sends
 * again its claims still not marked sent: the writer had two alert timeouts to send and mark them.
 */
export function alertGrace(rules: Pick<AlertRules, 'alertTimeout'>): number {
  return 2 * rules.alertTimeout;
}

/**
 * A write that ends step `before.seq` (`finish`, `schedule`, `kickoff`, `retry`: each clears
 * `lock_alerts`) keeps the claims still unmarked (overwrite alerts, and failure alerts: a kickoff
 * after a failure whose alert was not sent), less the writer's `sent` (none when overwrite alerts
 * are off); when it keeps any, its ledger `record` (if given) comes due within the grace, so the
 * sweep looks soon. Unchanged in the usual case: the lock had no alerts.
 */
export function endStepAlerts<R extends { lock: Lock; record?: LedgerRecord }>(
  rules: AlertRules, ended: R, before: Lock, sent: readonly string[], now: Date,
): R {
  if (before.alerts.length === 0) return ended;
  // Alerts of a reason that is off would be sent by nobody: the step's end drops them.
  const { alertOnOverwrite, alertOnFailure } = rules;
  if (!alertOnOverwrite && !alertOnFailure) return ended;
  const kept = carriedAlerts(before, sent, { overwrite: alertOnOverwrite, failure: alertOnFailure });
  if (kept.length === 0) return ended;
  const out = { ...ended, lock: alerted(ended.lock, { alerts: kept }) };
  const soon = now.getTime() + alertGrace(rules);
  if (out.record && out.record.due.getTime() > soon) out.record = { ...out.record, due: new Date(soon) };
  return out;
}

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
 * except claims not yet marked sent (overwrite and failure alike): they are kept until someone sends them.
 */
export function claimAlert(config: AlertRules, lock: Lock, who: Takeover | { failed: string }): string[] | undefined {
  const failure = 'failed' in who;
  if (!(failure ? config.alertOnFailure : config.alertOnOverwrite)) return undefined;
  const prefix = failurePrefix(lock.seq);
  const marker = failure ? `${prefix}${who.failed}` : `overwrite:${lock.seq}:${who.previous}:${who.next}`;
  // A failure is alerted once per failing attempt (the bare marker is an older version's, for the step).
  // Another attempt's failure of the same step (after an operator's retry) is its own alert, also when
  // the first one's claim is still owed and carried.
  if (failure && lock.alerts.some((a) => a === prefix.slice(0, -1) || a === `${marker}${SENT}`)) return undefined;
  if (lock.alerts.includes(marker)) return undefined;
  return [...lock.alerts.filter((a) => markerSeq(a) === lock.seq || isUnsentClaim(a)), marker];
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
  const marker = lock.alerts.find((a) => a.startsWith(prefix) && !a.endsWith(SENT));
  return marker?.slice(prefix.length);
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

function isUnsentClaim(marker: string): boolean {
  return unsentOverwrite(marker) !== undefined || unsentFailureClaim(marker) !== undefined;
}

/** A failure alert claimed on an entity and not marked sent: its step, the attempt that failed, its marker. */
export interface FailureClaim {
  seq: number;
  failed: string;
  marker: string;
}

/** The failure claim a marker (`failure:<seq>:<attempt>`) is, or undefined when it is none or is marked sent. */
export function unsentFailureClaim(marker: string): FailureClaim | undefined {
  if (!marker.startsWith('failure:') || marker.endsWith(SENT)) return undefined;
  const rest = marker.slice('failure:'.length);
  const cut = rest.indexOf(':');
  const seq = Number(rest.slice(0, cut));
  if (cut <= 0 || !Number.isSafeInteger(seq) || cut >= rest.length - 1) return undefined;
  return { seq, failed: rest.slice(cut + 1), marker };
}

/**
 * The failure alerts claimed on the lock and not marked sent that a step's end carried over: those
 * of a step other than the lock's own failed step (whose alert the sweep sends from that step's
 * ledger record, `unsentFailure`). A kickoff after a failure whose alert was not sent carries it.
 */
export function carriedFailures(lock: Lock): FailureClaim[] {
  const out: FailureClaim[] = [];
  for (const marker of lock.alerts) {
    const claim = unsentFailureClaim(marker);
    if (claim && !(claim.seq === lock.seq && lock.state === 'failed')) out.push(claim);
  }
  return out;
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

/** Which claims a step's end carries: those of the reasons whose alerts are on. */
export interface CarriedReasons {
  overwrite: boolean;
  failure: boolean;
}

/**
 * What a write that ends the step (`finish`, `schedule`, a kickoff, an operator's retry) keeps of
 * the lock's alerts: the claims not yet marked sent (overwrite alerts, and failure alerts, a
 * kickoff after a failed step's unsent one included), less those in `sent` (the writer's own sends,
 * which the alerter took). Empty in the usual case: the step ends with no alert owed.
 */
export function carriedAlerts(lock: Lock, sent: readonly string[], reasons: CarriedReasons = { overwrite: true, failure: true }): string[] {
  return lock.alerts.filter((m) => !sent.includes(m) &&
    ((reasons.overwrite && unsentOverwrite(m) !== undefined) || (reasons.failure && unsentFailureClaim(m) !== undefined)));
}

/** The step a marker (`reason:seq[:…]`) belongs to. */
function markerSeq(marker: string): number {
  return Number(marker.split(':')[1]);
}

/** The marker a failure's claim wrote (`claimAlert`): step `seq`, the attempt that failed. */
export function failureMarker(seq: number, failed: string): string {
  return `failure:${seq}:${failed}`;
}
