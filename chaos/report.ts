/**
 * What a run prints: a table for people, the history of a broken chain, then one JSON line, last,
 * for scripts.
 */
import type { ChaosResult } from './run';

/** The JSON line's fields, in order. */
export interface ChaosSummary {
  emulator: string;
  deliveries: number;
  chains: number;
  steps: number;
  duplicatesDelivered: number;
  effectsDuplicatedUnalerted: number;
  overwritesAlerted: number;
  lostSteps: number;
  chainsComplete: number;
  chainsFailed: number;
  workerKills: number;
  storeFaults: number;
  tasksLost: number;
  tasksDropped: number;
  /** Workers that died without being killed on purpose. */
  workerDeaths: number;
  /** Overwrites the run records show (an attempt that lost its lease), and of those, the ones no alert named. */
  overwritesEvident: number;
  overwriteAlertsLost: number;
  /** Chains stored failed whose failure no alert reported. */
  failureAlertsLost: number;
  /** Lost alerts in all (overwrite and failure): the invariant is 0. */
  alertsLost: number;
  /** `--freeze-idle`: SIGSTOPs after a last answer, SIGCONTs before a request or a SIGTERM, idle workers replaced. */
  freezes: number;
  thaws: number;
  scaleIns: number;
  /** `--sigterm`: SIGTERMs sent, and workers SIGKILLed at the end of their grace. */
  sigterms: number;
  sigkillsAfterGrace: number;
  /** Step attempts running at a SIGTERM, and what became of them (see `DrainFigures`). */
  drainInFlight: number;
  drainFinished: number;
  drainHandedBackSilently: number;
  drainHandedBackAlerted: number;
  drainCutByKill: number;
  /** Steps running at a SIGTERM whose effect was recorded by more than one attempt. */
  drainRanTwice: number;
  /** Step attempts a worker started after its SIGTERM (their request may have come just before it). */
  drainStartedAfterTerm: number;
  /** Requests sent to a worker after its SIGTERM, by answer (0: none); a stopping worker should answer 503, or none once closed. */
  drainAnswersAfterTerm: Record<string, number>;
  /** Fan-outs: planned (nested included), judged (their parent got past the fanning step), and nested among those. */
  fanOuts: number;
  fanOutsJudged: number;
  fanOutsNested: number;
  /** Children of judged fan-outs: succeeded, failed for good. */
  fanOutChildren: number;
  fanOutChildrenSucceeded: number;
  fanOutChildrenFailed: number;
  /** Fan-outs joined; join runs in all; joins run again with an overwrite alert naming each extra run. */
  joins: number;
  joinRuns: number;
  joinsRunAgainAlerted: number;
  /** The join invariants (each 0): extra runs no alert explains, joins lost, started before a child settled, shown other than the children's ends. */
  joinsDuplicatedUnalerted: number;
  joinsLost: number;
  joinsEarly: number;
  joinsMisinformed: number;
  /** The outcomes the joins were told, by outcome (every run). */
  joinOutcomes: Record<string, number>;
  /** The longest time from the last child's end to its join's start. */
  joinAfterLastChildMaxMs: number;
  violations: number;
  stepP50Ms: number;
  stepP99Ms: number;
  recoveryMaxMs: number;
  wallMs: number;
  seed: number;
}

export function summary(r: ChaosResult): ChaosSummary {
  const sorted = [...r.dispatcher.latenciesMs].sort((a, b) => a - b);
  const f = r.verdict.fanOut;
  return {
    emulator: r.options.emulator,
    deliveries: r.dispatcher.deliveries,
    chains: r.options.chains,
    steps: r.verdict.steps,
    duplicatesDelivered: r.dispatcher.duplicatesDelivered,
    effectsDuplicatedUnalerted: r.verdict.effectsDuplicatedUnalerted,
    overwritesAlerted: r.verdict.overwritesAlerted,
    lostSteps: r.verdict.lostSteps,
    chainsComplete: r.verdict.chainsComplete,
    chainsFailed: r.verdict.chainsFailed,
    workerKills: r.workerKills,
    storeFaults: r.proxy.resets + r.proxy.delayWindows + r.proxy.outages,
    tasksLost: r.dispatcher.tasksLost,
    tasksDropped: r.dispatcher.tasksDropped,
    workerDeaths: r.deaths.length,
    overwritesEvident: r.verdict.overwritesEvident,
    overwriteAlertsLost: r.verdict.overwriteAlertsLost,
    failureAlertsLost: r.verdict.failureAlertsLost,
    alertsLost: r.verdict.overwriteAlertsLost + r.verdict.failureAlertsLost,
    freezes: r.fleet.freezes,
    thaws: r.fleet.thaws,
    scaleIns: r.fleet.scaleIns,
    sigterms: r.fleet.terms,
    sigkillsAfterGrace: r.fleet.termKills,
    drainInFlight: r.drain.inFlight,
    drainFinished: r.drain.finished,
    drainHandedBackSilently: r.drain.handedBackSilently,
    drainHandedBackAlerted: r.drain.handedBackAlerted,
    drainCutByKill: r.drain.cutByKill,
    drainRanTwice: r.drain.ranTwice,
    drainStartedAfterTerm: r.drain.startedAfterTerm,
    drainAnswersAfterTerm: r.fleet.answersWhileStopping,
    fanOuts: f.planned,
    fanOutsJudged: f.judged,
    fanOutsNested: f.nested,
    fanOutChildren: f.children,
    fanOutChildrenSucceeded: f.childrenSucceeded,
    fanOutChildrenFailed: f.childrenFailed,
    joins: f.joined,
    joinRuns: f.joinRuns,
    joinsRunAgainAlerted: f.joinsRunAgainAlerted,
    joinsDuplicatedUnalerted: f.joinsDuplicatedUnalerted,
    joinsLost: f.joinsLost,
    joinsEarly: f.joinsEarly,
    joinsMisinformed: f.joinsMisinformed,
    joinOutcomes: f.outcomes,
    joinAfterLastChildMaxMs: f.joinAfterLastChildMaxMs,
    violations: r.verdict.violations.length,
    stepP50Ms: percentile(sorted, 0.5),
    stepP99Ms: percentile(sorted, 0.99),
    recoveryMaxMs: r.verdict.recoveryMaxMs,
    wallMs: r.wallMs,
    seed: r.options.seed,
  };
}

/** The table, the broken rules and the histories of broken chains. */
export function table(r: ChaosResult): string {
  const s = summary(r);
  const o = r.options;
  const d = r.dispatcher;
  const rows: [string, string][] = [
    ['seed', String(o.seed)],
    ['emulator', `${o.emulator} (${r.emulatorHost})`],
    ['load', `${o.chains} chains × ${o.steps} steps, ${o.workers} workers, bursts of ${o.burst} every ${o.burstEveryMs} ms`],
    ['lease', `${o.leaseMs} ms; maxRetries ${o.maxRetries}; sweep every ${o.sweepEveryMs} ms, stallAfter ${Math.max(o.stallAfterMs, o.leaseMs)} ms`],
    ['handlers', `${o.slowRate * 100} % slow (~${o.slowMs} ms), alerter takes ${o.alertMs} ms`],
    ['chains complete / failed', `${s.chainsComplete} / ${s.chainsFailed} of ${o.chains}`],
    ['steps run (distinct)', `${s.steps} (effects recorded ${r.verdict.effects})`],
    ['lost steps', String(s.lostSteps)],
    ['steps run again, each extra run alerted as an overwrite', String(r.verdict.effectsDuplicatedAlerted)],
    ['effects duplicated unalerted (steps: no alert / too few alerts)', `${s.effectsDuplicatedUnalerted} (${r.verdict.duplicatedWithoutAlert} / ${r.verdict.duplicatedBeyondAlerts})`],
    ['overwrite alerts / failure alerts (distinct ids; repeats received)', `${s.overwritesAlerted} / ${r.verdict.failuresAlerted} (${r.verdict.alertsRepeated})`],
    ['lost alerts: overwrites no alert named (of those seen) / failures', `${s.overwriteAlertsLost} (of ${s.overwritesEvident}) / ${s.failureAlertsLost}`],
    ['fan-outs planned / judged (nested) / abandoned before sealed', `${s.fanOuts} / ${s.fanOutsJudged} (${s.fanOutsNested}) / ${r.verdict.fanOut.abandoned}; ${o.fanOutChildren} children each, ${o.fanOutChildFailRate * 100} % failing by design`],
    ['fan-out children: succeeded / failed / lost', `${s.fanOutChildrenSucceeded} / ${s.fanOutChildrenFailed} / ${r.verdict.fanOut.childrenLost} of ${s.fanOutChildren}`],
    ['joins run / join runs / run again, alerted / failed for good', `${s.joins} / ${s.joinRuns} / ${s.joinsRunAgainAlerted} / ${r.verdict.fanOut.joinsFailed}`],
    ['joins: run twice unalerted / lost / early / misinformed', `${s.joinsDuplicatedUnalerted} / ${s.joinsLost} / ${s.joinsEarly} / ${s.joinsMisinformed}`],
    ['join outcomes (every run)', answers(s.joinOutcomes) || 'none'],
    ['longest from last child\'s end to join start', `${s.joinAfterLastChildMaxMs} ms`],
    ['deliveries (duplicates)', `${s.deliveries} (${s.duplicatesDelivered})`],
    ['answers', answers(d.statuses)],
    ['tasks created / already existed / create faults', `${d.creates} / ${d.alreadyExists} / ${d.createFaults}`],
    ['tasks late / lost / dropped after maxAttempts', `${d.lateDeliveries} / ${s.tasksLost} / ${s.tasksDropped}`],
    ['worker kills / unexpected deaths', `${s.workerKills} / ${r.deaths.length}`],
    ['frozen when idle: freezes / thaws / scale-ins', o.freezeIdle ? `${s.freezes} / ${s.thaws} / ${s.scaleIns} (scale-in after ${o.scaleInAfterMs} ms idle)` : 'off'],
    ['scheduler sweeps (answers)', `${r.scheduler.sweeps} (${answers(r.scheduler.statuses)})`],
    ['SIGTERMs / SIGKILLed after the grace', o.sigterm ? `${s.sigterms} / ${s.sigkillsAfterGrace} (grace ${o.graceMs} ms)` : 'off'],
    ['drains: attempts running at SIGTERM / finished / handed back silently / alerted / cut by SIGKILL', o.sigterm ? `${s.drainInFlight} / ${s.drainFinished} / ${s.drainHandedBackSilently} / ${s.drainHandedBackAlerted} / ${s.drainCutByKill}` : 'off'],
    ['drains: steps run twice / attempts started after SIGTERM / requests sent after SIGTERM, by answer', o.sigterm ? `${s.drainRanTwice} / ${s.drainStartedAfterTerm} / ${answers(r.fleet.answersWhileStopping) || 'none sent'}` : 'off'],
    ['store faults', `${r.proxy.resets} resets, ${r.proxy.delayWindows} delay windows, ${r.proxy.outages} outage(s) of ${o.outageMs} ms`],
    ['step latency p50 / p99 (created → 2xx)', `${s.stepP50Ms} / ${s.stepP99Ms} ms`],
    ['answer time p50 / p99 (request → answer)', `${percentile([...d.answerMs].sort((a, b) => a - b), 0.5)} / ${percentile([...d.answerMs].sort((a, b) => a - b), 0.99)} ms`],
    ['longest wait between two steps of a chain', `${s.recoveryMaxMs} ms`],
    ['fault phase / wall', `${Math.round(r.faultPhaseMs / 1000)} s / ${Math.round(r.wallMs / 1000)} s`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = ['Chaos run', ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)];
  const logs = Object.entries(r.logCounts).sort((a, b) => b[1] - a[1]).slice(0, 12);
  if (logs.length > 0) lines.push('Workers\' warnings and errors', ...logs.map(([m, n]) => `  ${String(n).padStart(6)}  ${m}`));
  if (r.verdict.violations.length > 0) {
    lines.push(`Broken invariants: ${r.verdict.violations.length}`);
    const byRule = new Map<string, number>();
    for (const v of r.verdict.violations) byRule.set(v.rule, (byRule.get(v.rule) ?? 0) + 1);
    for (const [rule, n] of byRule) lines.push(`  ${rule}: ${n}`);
    for (const v of r.verdict.violations.slice(0, 10)) lines.push(`  ${v.chain ?? 'run'}${v.seq !== undefined ? ` step ${v.seq}` : ''}: ${v.rule}: ${v.detail}`);
    if (r.verdict.lostSteps > 0) lines.push(...lostStepCauses(r));
    for (const h of r.histories) lines.push(`History of ${h.chain}:`, ...h.lines.map((l) => `  ${l}`));
    lines.push(`Files (effects, handler runs, alerts, worker logs, the fleet's SIGTERMs): ${r.dir}`);
  }
  return lines.join('\n');
}

/** Why the lost steps were lost, as far as the dispatcher knows. */
function lostStepCauses(r: ChaosResult): string[] {
  const lost = r.verdict.violations.filter((v) => v.rule === 'lost-step').length;
  const known = r.dispatcher.tasksLost + r.dispatcher.tasksDropped;
  return [
    `  ${lost} lost step(s); the dispatcher lost ${r.dispatcher.tasksLost} task(s) on purpose and dropped ${r.dispatcher.tasksDropped} after maxAttempts (${known} in all).`,
    '  The sweep re-delivers a step that made no progress for stallAfter (docs/design.md, section 5): a step still lost',
    '  once the run settled is a step the ledger did not keep alive; its chain\'s history is below.',
  ];
}

/** Counts by HTTP status, `none` for no answer. */
function answers(statuses: Record<string, number>): string {
  return Object.entries(statuses).sort().map(([k, v]) => `${k === '0' ? 'none' : k}: ${v}`).join(', ');
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!);
}
