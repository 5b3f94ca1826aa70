/**
 * The oracle: judges a run from what the handlers and the alerter recorded in their own files,
 * never from the library's events or lock fields. Its rules, checked once the faults stopped and
 * the sweep ran:
 *
 * - every chain is complete (each of its S steps has an effect), or failed (a failure alert names
 *   the step it stopped at, and no later step ran);
 * - every step's effect is recorded exactly once, except where a lease was overwritten: every
 *   effect but one must be by an attempt that an overwrite alert of that step names as the one
 *   overwritten (an attempt that ran and then lost its lease: killed, hung, cut off from the
 *   store). So a step overwritten n times has at most n + 1 effects and n distinct alerts. Alerts
 *   are told apart by their stable id: the same alert received twice counts once (`alertsRepeated`);
 * - each chain's steps ran in order: the first effect of step k comes after the first of step k-1;
 * - no step is lost: a chain that is neither complete nor failed is stuck at a lost step;
 * - no worker died except those killed on purpose (reported by the fleet).
 */
import type { AlertRecord, EffectRecord } from './protocol';

/** One broken rule, about one chain (or the run). */
export interface Violation {
  chain?: string;
  seq?: number;
  rule: 'lost-step' | 'duplicate-unalerted' | 'out-of-order' | 'ran-after-failure' | 'worker-died';
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
  /** The longest wait between two consecutive steps of a chain (first effects), ms. */
  recoveryMaxMs: number;
  violations: Violation[];
}

/** Judges `chains` chains named by `chainName(i)`, of `steps` steps each. */
export function judge(chainNames: readonly string[], steps: number, effects: readonly EffectRecord[], alerts: readonly AlertRecord[]): Verdict {
  const distinct = [...new Map(alerts.map((a, i) => [a.id ?? `#${i}`, a])).values()];
  const effectsBy = groupBy(effects, (e) => `${e.key}/${e.seq}`);
  const overwrites = groupBy(distinct.filter((a) => a.reason === 'overwrite'), (a) => `${a.key}/${a.seq}`);
  const failures = groupBy(distinct.filter((a) => a.reason === 'failure'), (a) => a.key);
  const v: Verdict = {
    chainsComplete: 0, chainsFailed: 0, steps: 0, effects: effects.length, lostSteps: 0, effectsDuplicatedUnalerted: 0,
    duplicatedWithoutAlert: 0, duplicatedBeyondAlerts: 0, effectsDuplicatedAlerted: 0, overwritesAlerted: distinct.filter((a) => a.reason === 'overwrite').length,
    alertsRepeated: alerts.length - distinct.length,
    failuresAlerted: distinct.filter((a) => a.reason === 'failure').length, recoveryMaxMs: 0, violations: [],
  };
  for (const chain of chainNames) {
    const failedAt = Math.min(...(failures.get(chain) ?? []).map((a) => a.seq));
    let previousFirst: number | undefined;
    let stuckAt: number | undefined;
    for (let seq = 1; seq <= steps; seq++) {
      const ran = (effectsBy.get(`${chain}/${seq}`) ?? []).sort((a, b) => a.t - b.t);
      const stepAlerts = overwrites.get(`${chain}/${seq}`) ?? [];
      const overwritten = new Set(stepAlerts.map((a) => a.previousAttempt));
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
