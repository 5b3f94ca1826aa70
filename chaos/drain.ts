/**
 * What the SIGTERM drains did, from the fleet's SIGTERMs and the handlers' own records (never from
 * the library's events): the step attempts running on a worker when it got SIGTERM, and what
 * became of each; the attempts a worker started after its SIGTERM; and how many steps ran twice.
 */
import type { TermEvent } from './fleet';
import type { AlertRecord, EffectRecord, RunRecord } from './protocol';

/** The drains' figures (all 0 without `--sigterm`). */
export interface DrainFigures {
  /** Step attempts running on a worker when it got SIGTERM. */
  inFlight: number;
  /** Of those: finished (returned, threw or failed) before the process exited. */
  finished: number;
  /** Stopped on `ctx.signal` (rejected with its reason) and named by no alert: handed back silently. */
  handedBackSilently: number;
  /** Named by an alert as the attempt before (a hand-back that interrupted it, or a takeover after the kill). */
  handedBackAlerted: number;
  /** Still in their handler when the SIGKILL came at the end of the grace (no record that they left). */
  cutByKill: number;
  /** Steps with an attempt in flight at a SIGTERM whose effect was recorded by more than one attempt. */
  ranTwice: number;
  /**
   * Step attempts that entered their handler on a worker after its SIGTERM. Their request may have
   * come in just before it, while the lease was being taken: the requests sent after a SIGTERM,
   * and their answers, are the fleet's `answersWhileStopping`.
   */
  startedAfterTerm: number;
}

/** Counts what the drains did. */
export function drainFigures(terms: readonly TermEvent[], runs: readonly RunRecord[], effects: readonly EffectRecord[], alerts: readonly AlertRecord[]): DrainFigures {
  const figures: DrainFigures = { inFlight: 0, finished: 0, handedBackSilently: 0, handedBackAlerted: 0, cutByKill: 0, ranTwice: 0, startedAfterTerm: 0 };
  const named = new Set(alerts.filter((a) => a.reason !== 'failure').map((a) => `${a.key}/${a.seq}/${a.previousAttempt ?? ''}`));
  const left = new Map(runs.filter((r) => r.what === 'left').map((r) => [r.attempt, r]));
  const stepsInFlight = new Set<string>();
  for (const term of terms) {
    const exitT = term.exitT ?? Infinity;
    for (const run of runs) {
      if (run.what !== 'entered' || run.slot !== term.slot || run.incarnation !== term.incarnation) continue;
      if (run.t >= term.t) {
        figures.startedAfterTerm++;
        continue;
      }
      const end = left.get(run.attempt);
      if (end && end.t < term.t) continue; // done before the SIGTERM
      figures.inFlight++;
      stepsInFlight.add(`${run.key}/${run.seq}`);
      if (named.has(`${run.key}/${run.seq}/${run.attempt}`)) figures.handedBackAlerted++;
      else if (end?.outcome === 'aborted') figures.handedBackSilently++;
      if (!end) figures.cutByKill++;
      else if (end.outcome !== 'aborted' && end.t <= exitT) figures.finished++;
    }
  }
  const attemptsByStep = new Map<string, Set<string>>();
  for (const e of effects) {
    const step = `${e.key}/${e.seq}`;
    if (!stepsInFlight.has(step)) continue;
    const attempts = attemptsByStep.get(step) ?? new Set<string>();
    attempts.add(e.attempt);
    attemptsByStep.set(step, attempts);
  }
  figures.ranTwice = [...attemptsByStep.values()].filter((a) => a.size > 1).length;
  return figures;
}
