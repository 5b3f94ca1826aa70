/**
 * The oracle: judges a run from what the handlers and the alerter recorded in their own files,
 * never from the library's events; of the lock fields it reads only the final state of each chain,
 * as the harness read it with the Datastore client at the end. Its rules, checked once the faults
 * stopped and the sweep ran:
 *
 * - every chain is complete (each of its S steps has an effect), or failed (a failure alert names
 *   the step it stopped at, or it is stored failed there, and no later step ran);
 * - every step's effect is recorded exactly once, except where a lease was overwritten: every
 *   effect but one must be by an attempt that an alert of that step (an overwrite, or any reason
 *   but failure) names as the one
 *   overwritten (an attempt that ran and then lost its lease: killed, hung, cut off from the
 *   store). So a step overwritten n times has at most n + 1 effects and n distinct alerts. Alerts
 *   are told apart by their stable id: the same alert received twice counts once (`alertsRepeated`);
 * - each chain's steps ran in order: the first effect of step k comes after the first of step k-1;
 * - no step is lost: a chain that is neither complete nor failed is stuck at a lost step;
 * - no alert is lost: every overwrite and every failure the oracle knows happened reached the
 *   alerter at least once, and every copy of one alert has the same id:
 *   - overwrites, from the handlers' run records (entered, left and how): the attempts of a step
 *     that held the lease to the end of their run (never left the handler: cut off; returned; or
 *     recorded the effect: a lease is not released after it) were not released by their own
 *     outcome, so every one of them but the last to take the lease lost it to a takeover or a
 *     hand-back, which an alert naming it as the attempt before must report (an overwrite, or any
 *     reason other than failure that names an interrupted attempt): of n such attempts, at most one
 *     may go unnamed. (The order of takes is not the order of entries: a worker blocked or frozen
 *     between its take and its handler enters late, so the rule counts rather than orders.) An
 *     attempt that threw, failed or stopped on its signal before its effect may have been released
 *     without an alert, so it is not counted;
 *   - a failure, from the entity's stored state at the end (read by the harness with the client,
 *     `lock_state` failed at `lock_seq`): a failure alert of that step;
 *   - copies: alerts about the same event (reason, key, step, attempt before, attempt after) with
 *     different ids;
 * - no worker died except those killed on purpose (reported by the fleet).
 */
import type { AlertRecord, EffectRecord, RunRecord } from './protocol';

/** A chain entity's lock at the end of the run, as stored. */
export interface FinalState {
  /** `lock_state`, when stored. */
  state: string | undefined;
  /** `lock_seq`. */
  seq: number;
}

/** What the oracle judges from beyond effects and alerts (both optional: without them, the rules that need them are not checked). */
export interface Evidence {
  /** The handlers' run records. */
  runs?: readonly RunRecord[];
  /** Per chain name, its stored lock at the end. */
  finals?: ReadonlyMap<string, FinalState>;
}

/** One broken rule, about one chain (or the run). */
export interface Violation {
  chain?: string;
  seq?: number;
  rule: 'lost-step' | 'duplicate-unalerted' | 'out-of-order' | 'ran-after-failure' | 'alert-lost' | 'alert-id-differs' | 'worker-died';
  detail: string;
}

/** What the oracle found. */
export interface Verdict {
  chainsComplete: number;
  chainsFailed: number;
  /** Distinct steps whose effect was recorded. */
  steps: number;
  effects: number;
  lostSteps: number;
  /** Effects beyond the one each step may have whose attempt no overwrite alert names as overwritten. */
  effectsDuplicatedUnalerted: number;
  /** Of the offending steps: those with no overwrite alert at all, and those with some (but not enough). */
  duplicatedWithoutAlert: number;
  duplicatedBeyondAlerts: number;
  /** Steps run more than once, every extra run covered by an overwrite alert. */
  effectsDuplicatedAlerted: number;
  /** Distinct overwrite alerts (by id). */
  overwritesAlerted: number;
  /** Alerts received more than once (the same id again): allowed, alerts are at least once. */
  alertsRepeated: number;
  failuresAlerted: number;
  /** Attempts the run records show lost their lease while running or after returning (each needs an alert naming it). */
  overwritesEvident: number;
  /** Of those, the ones no alert names: lost overwrite alerts. */
  overwriteAlertsLost: number;
  /** Chains stored failed at the end whose failure no alert reported. */
  failureAlertsLost: number;
  /** Events whose copies reached the alerter under more than one id. */
  alertIdsDiffering: number;
  /** The longest wait between two consecutive steps of a chain (first effects), ms. */
  recoveryMaxMs: number;
  violations: Violation[];
}

/** Judges the chains named `chainNames`, of `steps` steps each. */
export function judge(
  chainNames: readonly string[], steps: number, effects: readonly EffectRecord[], alerts: readonly AlertRecord[], evidence: Evidence = {},
): Verdict {
  const distinct = [...new Map(alerts.map((a, i) => [a.id ?? `#${i}`, a])).values()];
  const effectsBy = groupBy(effects, (e) => `${e.key}/${e.seq}`);
  // An overwrite, or any other reason but failure that names the attempt before (a hand-back that interrupted it).
  const overwrites = groupBy(distinct.filter((a) => a.reason !== 'failure'), (a) => `${a.key}/${a.seq}`);
  const failures = groupBy(distinct.filter((a) => a.reason === 'failure'), (a) => a.key);
  const runsBy = groupBy(evidence.runs ?? [], (r) => `${r.key}/${r.seq}`);
  const v: Verdict = {
    chainsComplete: 0, chainsFailed: 0, steps: 0, effects: effects.length, lostSteps: 0, effectsDuplicatedUnalerted: 0,
    duplicatedWithoutAlert: 0, duplicatedBeyondAlerts: 0, effectsDuplicatedAlerted: 0, overwritesAlerted: distinct.filter((a) => a.reason === 'overwrite').length,
    alertsRepeated: alerts.length - distinct.length,
    failuresAlerted: distinct.filter((a) => a.reason === 'failure').length,
    overwritesEvident: 0, overwriteAlertsLost: 0, failureAlertsLost: 0, alertIdsDiffering: 0, recoveryMaxMs: 0, violations: [],
  };
  checkAlertIds(alerts, v);
  for (const chain of chainNames) {
    const final = evidence.finals?.get(chain);
    const storedFailedAt = final?.state === 'failed' ? final.seq : undefined;
    const alertedFailures = failures.get(chain) ?? [];
    if (storedFailedAt !== undefined && !alertedFailures.some((a) => a.seq === storedFailedAt)) {
      v.failureAlertsLost++;
      v.violations.push({ chain, seq: storedFailedAt, rule: 'alert-lost', detail: `step ${storedFailedAt} is stored failed for good and no failure alert of it reached the alerter` });
    }
    const failedAt = Math.min(...alertedFailures.map((a) => a.seq), storedFailedAt ?? Infinity);
    let previousFirst: number | undefined;
    let stuckAt: number | undefined;
    for (let seq = 1; seq <= steps; seq++) {
      const ran = (effectsBy.get(`${chain}/${seq}`) ?? []).sort((a, b) => a.t - b.t);
      const stepAlerts = overwrites.get(`${chain}/${seq}`) ?? [];
      const overwritten = new Set(stepAlerts.map((a) => a.previousAttempt));
      const holders = leaseHolders(runsBy.get(`${chain}/${seq}`) ?? [], new Set(ran.map((e) => e.attempt)));
      const unnamed = holders.filter((attempt) => !overwritten.has(attempt));
      v.overwritesEvident += Math.max(0, holders.length - 1);
      if (unnamed.length > 1) {
        v.overwriteAlertsLost += unnamed.length - 1;
        v.violations.push({ chain, seq, rule: 'alert-lost', detail: `${holders.length} attempts held the lease to the end of their run (never left, returned or recorded the effect), so ${holders.length - 1} lost it to another; ${unnamed.length} of them no alert names (${unnamed.join(', ')}): at most the last to take it may go unnamed` });
      }
      if (seq > failedAt) {
        if (ran.length > 0) v.violations.push({ chain, seq, rule: 'ran-after-failure', detail: `step ${seq} ran after step ${failedAt} failed for good` });
        continue;
      }
      if (ran.length === 0) {
        if (seq !== failedAt) stuckAt ??= seq;
        continue;
      }
      if (stuckAt !== undefined) v.violations.push({ chain, seq, rule: 'out-of-order', detail: `step ${seq} ran but step ${stuckAt} never did` });
      v.steps++;
      const unexplained = ran.filter((e) => !overwritten.has(e.attempt)).length;
      if (unexplained > 1) {
        v.effectsDuplicatedUnalerted += unexplained - 1;
        if (stepAlerts.length === 0) v.duplicatedWithoutAlert++;
        else v.duplicatedBeyondAlerts++;
        v.violations.push({ chain, seq, rule: 'duplicate-unalerted', detail: `${ran.length} effects, ${unexplained} by attempts no overwrite alert names, ${stepAlerts.length} overwrite alert(s)` });
      } else if (ran.length > 1) {
        v.effectsDuplicatedAlerted++;
      }
      const first = ran[0]!.t;
      if (previousFirst !== undefined) {
        if (first < previousFirst) v.violations.push({ chain, seq, rule: 'out-of-order', detail: `step ${seq} first ran ${previousFirst - first} ms before step ${seq - 1}` });
        else v.recoveryMaxMs = Math.max(v.recoveryMaxMs, first - previousFirst);
      }
      previousFirst = first;
    }
    if (stuckAt !== undefined) {
      v.lostSteps++;
      v.violations.push({ chain, seq: stuckAt, rule: 'lost-step', detail: `step ${stuckAt} never ran and the chain did not fail` });
    } else if (Number.isFinite(failedAt)) {
      v.chainsFailed++;
    } else {
      v.chainsComplete++;
    }
  }
  return v;
}

/**
 * The attempts of one step that held their lease to the end of their run, from the run records:
 * those that never left their handler (cut off), that returned, or that recorded their effect.
 * None of them can have been released by its own outcome (a returned step is stored complete, and
 * a lease is kept after the effect), so all but the last to take the lease lost it to another
 * attempt (see the file's comment). Attempts that threw, failed or stopped on the signal before
 * their effect are left out: their outcome may have released the lease.
 */
export function leaseHolders(runs: readonly RunRecord[], effected: ReadonlySet<string> = new Set()): string[] {
  const left = new Map(runs.filter((r) => r.what === 'left').map((r) => [r.attempt, r]));
  const entered = [...new Set(runs.filter((r) => r.what === 'entered').map((r) => r.attempt))];
  return entered.filter((attempt) => {
    const end = left.get(attempt);
    return !end || end.outcome === 'returned' || effected.has(attempt);
  });
}

/** Flags every event whose copies came under more than one id. */
function checkAlertIds(alerts: readonly AlertRecord[], v: Verdict): void {
  const byEvent = groupBy(alerts.filter((a) => a.id !== undefined), (a) => [a.reason, a.key, a.seq, a.previousAttempt ?? '', a.newAttempt ?? ''].join('/'));
  for (const copies of byEvent.values()) {
    const ids = new Set(copies.map((a) => a.id));
    if (ids.size < 2) continue;
    const a = copies[0]!;
    v.alertIdsDiffering++;
    v.violations.push({ chain: a.key, seq: a.seq, rule: 'alert-id-differs', detail: `one ${a.reason} alert (attempt ${a.previousAttempt ?? '-'} → ${a.newAttempt ?? '-'}) came under ${ids.size} ids: ${[...ids].join(', ')}` });
  }
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}
