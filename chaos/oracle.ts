/**
 * The oracle: judges a run from what the handlers and the alerter recorded in their own files,
 * never from the library's events; of the lock fields it reads only the final state of each chain,
 * as the harness read it with the store's own client (Datastore or Firestore) at the end. Its
 * rules, checked once the faults stopped and the sweep ran:
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
 * - no worker died except those killed on purpose (reported by the fleet);
 * - every fan-out (chaos/fan-out-plan.ts) whose parent got past its fanning step is judged: its
 *   children as chains (the rules above), and its join by three rules of its own:
 *   - the join ran exactly once: its step's effects (each carries what `ctx.fanIn()` showed) are
 *     judged as any step's, an extra run no overwrite alert names is `join-ran-twice`; a parent
 *     that neither joined nor failed at its join step lost its join (`join-lost`);
 *   - it started only after every child settled: the join's first attempt entered its handler
 *     after each child's end (`join-early` otherwise). A child's end is bounded from below by
 *     records it wrote before it could settle: the earliest effect of its last step (completed),
 *     or the earliest run record of the step it failed at (failed); a child that never ended is
 *     not settled at all;
 *   - it saw every child's outcome: every run of the join saw each child once, in the state it
 *     ended in (its stored and alerted end: completed is `succeeded`, failed is `failed` with an
 *     error), with the result it set (`{ of: name }`; a nested child's also the count of its own
 *     children that succeeded), the counts per state of those ends, and the outcome the policy
 *     gives them (`join-misinformed` otherwise).
 *   A fan-out whose parent failed or stopped at or before its fanning step is not judged
 *   (`fanOutsAbandoned`): it may never have been sealed.
 */
import { CHILD_STEPS, type FanOutPlan, type PlannedPolicy } from './fan-out-plan';
import type { AlertRecord, EffectRecord, JoinSeen, RunRecord } from './protocol';

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
  /** Per chain name, its stored lock at the end (children's included). */
  finals?: ReadonlyMap<string, FinalState>;
  /** The run's fan-outs, by the name of the chain that fans out (nested ones included). */
  fanOuts?: ReadonlyMap<string, FanOutPlan>;
}

/** One broken rule, about one chain (or the run). */
export interface Violation {
  chain?: string;
  seq?: number;
  rule:
    | 'lost-step' | 'duplicate-unalerted' | 'out-of-order' | 'ran-after-failure' | 'alert-lost' | 'alert-id-differs' | 'worker-died'
    | 'join-ran-twice' | 'join-lost' | 'join-early' | 'join-misinformed';
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
  /** The fan-out figures (see the file's comment). */
  fanOut: FanOutVerdict;
  violations: Violation[];
}

/** What the oracle found of the fan-outs. */
export interface FanOutVerdict {
  /** Fan-outs planned, nested ones included. */
  planned: number;
  /** Judged: their parent got past the fanning step. Of those, nested ones. */
  judged: number;
  nested: number;
  /** Not judged: their parent failed (or stopped) at or before its fanning step. */
  abandoned: number;
  /** Children of judged fan-outs, by how they ended (`lost`: stuck at a lost step). */
  children: number;
  childrenSucceeded: number;
  childrenFailed: number;
  childrenLost: number;
  /** Fan-outs whose join recorded its effect; join effects in all; joins that failed for good instead. */
  joined: number;
  joinRuns: number;
  joinsFailed: number;
  /** Joins run again, every extra run named by an overwrite alert. */
  joinsRunAgainAlerted: number;
  /** Extra join runs no alert explains (the invariant is 0). */
  joinsDuplicatedUnalerted: number;
  /** Joins lost, started before a child settled, or shown something else than the children's ends (each 0). */
  joinsLost: number;
  joinsEarly: number;
  joinsMisinformed: number;
  /** The outcome the joins were told, by outcome. */
  outcomes: Record<string, number>;
  /** The longest time from the last child's end (its lower bound) to the join's first start, ms. */
  joinAfterLastChildMaxMs: number;
}

/** How one chain ended, as judged. */
interface ChainEnd {
  /** The step it failed at for good. */
  failedAt?: number;
  /** The first step that never ran (a lost step). */
  stuckAt?: number;
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
    overwritesEvident: 0, overwriteAlertsLost: 0, failureAlertsLost: 0, alertIdsDiffering: 0, recoveryMaxMs: 0,
    fanOut: {
      planned: 0, judged: 0, nested: 0, abandoned: 0, children: 0, childrenSucceeded: 0, childrenFailed: 0, childrenLost: 0, joined: 0, joinRuns: 0,
      joinsFailed: 0, joinsRunAgainAlerted: 0, joinsDuplicatedUnalerted: 0, joinsLost: 0, joinsEarly: 0, joinsMisinformed: 0, outcomes: {}, joinAfterLastChildMaxMs: 0,
    },
    violations: [],
  };
  checkAlertIds(alerts, v);
  const ends = new Map<string, ChainEnd>();
  /** Judges one chain of `steps` steps; `top`: one of the run's chains (counted complete or failed), not a child. */
  const judgeChain = (chain: string, steps: number, top: boolean): ChainEnd => {
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
    const end: ChainEnd = {};
    if (stuckAt !== undefined) {
      v.lostSteps++;
      v.violations.push({ chain, seq: stuckAt, rule: 'lost-step', detail: `step ${stuckAt} never ran and the chain did not fail` });
      end.stuckAt = stuckAt;
    } else if (Number.isFinite(failedAt)) {
      if (top) v.chainsFailed++;
      end.failedAt = failedAt;
    } else if (top) {
      v.chainsComplete++;
    }
    ends.set(chain, end);
    return end;
  };
  for (const chain of chainNames) judgeChain(chain, steps, true);
  const plans = evidence.fanOuts ?? new Map<string, FanOutPlan>();
  v.fanOut.planned = plans.size;
  const judgeFanOut = (plan: FanOutPlan): void => {
    const parentEnd = ends.get(plan.parent) ?? {};
    const notPast = Math.min(parentEnd.failedAt ?? Infinity, parentEnd.stuckAt ?? Infinity);
    if (notPast <= plan.fanAt) {
      v.fanOut.abandoned++;
      return;
    }
    v.fanOut.judged++;
    if (plan.joinPath === '/child-join') v.fanOut.nested++;
    const childEnds = new Map<string, ChainEnd>();
    for (const child of plan.children) {
      const end = judgeChain(child.name, CHILD_STEPS, false);
      childEnds.set(child.name, end);
      v.fanOut.children++;
      if (end.stuckAt !== undefined) v.fanOut.childrenLost++;
      else if (end.failedAt !== undefined) v.fanOut.childrenFailed++;
      else v.fanOut.childrenSucceeded++;
      if (child.nested) judgeFanOut(child.nested);
    }
    judgeJoin(plan, parentEnd, childEnds);
  };
  const judgeJoin = (plan: FanOutPlan, parentEnd: ChainEnd, childEnds: ReadonlyMap<string, ChainEnd>): void => {
    const { parent, joinSeq } = plan;
    const ran = (effectsBy.get(`${parent}/${joinSeq}`) ?? []).filter((e) => e.join !== undefined);
    const entries = (runsBy.get(`${parent}/${joinSeq}`) ?? []).filter((r) => r.what === 'entered');
    v.fanOut.joinRuns += ran.length;
    if (ran.length > 0) v.fanOut.joined++;
    else if (parentEnd.failedAt === joinSeq) v.fanOut.joinsFailed++;
    else {
      v.fanOut.joinsLost++;
      v.violations.push({ chain: parent, seq: joinSeq, rule: 'join-lost', detail: `the fan-out at step ${plan.fanAt} never joined: no run of its join step ${joinSeq} recorded its effect, and the chain did not fail there` });
    }
    // Exactly once: as a step's effects are judged.
    const overwritten = new Set((overwrites.get(`${parent}/${joinSeq}`) ?? []).map((a) => a.previousAttempt));
    const unexplained = ran.filter((e) => !overwritten.has(e.attempt)).length;
    if (unexplained > 1) {
      v.fanOut.joinsDuplicatedUnalerted += unexplained - 1;
      v.violations.push({ chain: parent, seq: joinSeq, rule: 'join-ran-twice', detail: `the join ran ${ran.length} times, ${unexplained} by attempts no overwrite alert names` });
    } else if (ran.length > 1) {
      v.fanOut.joinsRunAgainAlerted++;
    }
    // After every child settled.
    const starts = [...entries.map((r) => r.t), ...ran.map((e) => e.t)];
    if (starts.length > 0) {
      const start = Math.min(...starts);
      let lastEnd = -Infinity;
      for (const child of plan.children) {
        const end = childEnds.get(child.name) ?? {};
        const bound = endBound(child.name, end);
        if (bound === undefined) {
          if (end.stuckAt !== undefined) v.violations.push({ chain: parent, seq: joinSeq, rule: 'join-early', detail: `the join started though child ${child.name} never ended (stuck at step ${end.stuckAt})` });
          continue;
        }
        if (bound > start) v.violations.push({ chain: parent, seq: joinSeq, rule: 'join-early', detail: `the join started ${bound - start} ms before child ${child.name} ended` });
        lastEnd = Math.max(lastEnd, bound);
      }
      if (v.violations.some((x) => x.rule === 'join-early' && x.chain === parent && x.seq === joinSeq)) v.fanOut.joinsEarly++;
      else if (Number.isFinite(lastEnd)) v.fanOut.joinAfterLastChildMaxMs = Math.max(v.fanOut.joinAfterLastChildMaxMs, start - lastEnd);
    }
    // Saw every child's outcome.
    let misinformed = false;
    for (const e of ran) {
      const wrong = misreads(plan, e.join!, ends);
      if (wrong.length > 0) {
        misinformed = true;
        v.violations.push({ chain: parent, seq: joinSeq, rule: 'join-misinformed', detail: `attempt ${e.attempt}: ${wrong.join('; ')}` });
      }
      v.fanOut.outcomes[e.join!.outcome] = (v.fanOut.outcomes[e.join!.outcome] ?? 0) + 1;
    }
    if (misinformed) v.fanOut.joinsMisinformed++;
  };
  /** A lower bound of the time a child settled: records it wrote before it could (see the file's comment); undefined if it never ended. */
  const endBound = (child: string, end: ChainEnd): number | undefined => {
    if (end.stuckAt !== undefined) return undefined;
    const seq = end.failedAt ?? CHILD_STEPS;
    const times = end.failedAt !== undefined
      ? [...(runsBy.get(`${child}/${seq}`) ?? []).map((r) => r.t), ...(effectsBy.get(`${child}/${seq}`) ?? []).map((e) => e.t)]
      : (effectsBy.get(`${child}/${seq}`) ?? []).map((e) => e.t);
    return times.length > 0 ? Math.min(...times) : undefined;
  };
  for (const plan of plans.values()) {
    if (plan.joinPath === '/join') judgeFanOut(plan); // nested ones from their parent's
  }
  return v;
}

/** What a join's record shows otherwise than the children's ends, `ends` by chain name (nothing: it saw them all as they ended). */
function misreads(plan: FanOutPlan, seen: JoinSeen, ends: ReadonlyMap<string, ChainEnd>): string[] {
  const wrong: string[] = [];
  const truth = new Map(plan.children.map((c) => [c.name, ends.get(c.name) ?? {}]));
  const stateOf = (end: ChainEnd): string => (end.stuckAt !== undefined ? 'pending' : end.failedAt !== undefined ? 'failed' : 'succeeded');
  const counts: Record<string, number> = { total: plan.children.length, pending: 0, succeeded: 0, failed: 0, cancelled: 0, timedOut: 0 };
  for (const end of truth.values()) counts[stateOf(end)]!++;
  const seenNames = seen.children.map((c) => c.name);
  const missing = plan.children.filter((c) => !seenNames.includes(c.name)).map((c) => c.name);
  const extra = seenNames.filter((n, i) => !truth.has(n) || seenNames.indexOf(n) !== i);
  if (missing.length > 0) wrong.push(`children not shown: ${missing.join(', ')}`);
  if (extra.length > 0) wrong.push(`children shown that are not its own, or twice: ${extra.join(', ')}`);
  for (const c of seen.children) {
    const end = truth.get(c.name);
    if (!end) continue;
    const state = stateOf(end);
    if (c.state !== state) wrong.push(`${c.name} shown ${c.state}, ended ${state}`);
    else if (state === 'failed' && !c.error) wrong.push(`${c.name} shown failed without its error`);
    else if (state === 'succeeded') {
      const planned = plan.children.find((p) => p.name === c.name)!;
      const expected: Record<string, unknown> = { of: c.name };
      if (planned.nested) expected.joined = planned.nested.children.filter((g) => ends.has(g.name) && stateOf(ends.get(g.name)!) === 'succeeded').length;
      if (JSON.stringify(c.result) !== JSON.stringify(expected)) wrong.push(`${c.name} shown with result ${JSON.stringify(c.result)}, set ${JSON.stringify(expected)}`);
    }
  }
  for (const [name, n] of Object.entries(counts)) {
    if (seen.counts[name] !== n) wrong.push(`counts.${name} ${String(seen.counts[name])}, ended ${n}`);
  }
  const outcome = expectedOutcome(plan.policy, counts);
  if (seen.outcome !== outcome) wrong.push(`outcome ${seen.outcome}, the policy ${JSON.stringify(plan.policy)} gives ${outcome}`);
  return wrong;
}

/** The outcome the policy gives children that ended as `counts` says (the library's rule, restated). */
export function expectedOutcome(policy: PlannedPolicy, counts: Readonly<Record<string, number>>): string {
  const failures = (counts.failed ?? 0) + (counts.cancelled ?? 0) + (counts.timedOut ?? 0) + (counts.pending ?? 0);
  if (failures === 0) return 'succeeded';
  const tolerated = policy.tolerate !== undefined ? policy.tolerate : policy.require === 'succeeded' ? 0 : Infinity;
  return failures <= tolerated ? 'tolerated' : 'failed';
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
