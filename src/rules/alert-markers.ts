/**
 * Alert markers, as pure functions (docs/design.md, section 15): every overwrite of a lease is
 * alerted, and a step's failure for good once. The alert is claimed on the entity in the same write
 * that records the event (a marker in `lock_alerts`), then sent, then marked sent (`:sent`) once the
 * alerter took it (the `alerted` transition). A claim still unmarked is sent again: an overwrite's
 * by the next attempt that takes the lease or by the sweep (`alert/overwrite-alert.ts`), a failure's
 * by the sweep (`alert/failure-alert.ts`).
 */
import type { Config } from '../config/options';
import type { Lock } from './lock-fields';

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

/** The marker a failure's claim wrote (`claimAlert`): step `seq`, the attempt that failed. */
export function failureMarker(seq: number, failed: string): string {
  return `failure:${seq}:${failed}`;
}
