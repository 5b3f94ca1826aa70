/**
 * Rule (r) of the oracle: recurring work (issue 39) keeps its promise, one run per (schedule,
 * scheduled time) and none missed beyond the schedule's policies, judged on what the model saw:
 * the tasks the Lockers created for the schedules' first steps (each carries its payload
 * `{ schedule, scheduledAt }` and its chain), every call that ticked (its clock, the code of its
 * instance, whether it answered), the operator's pause, resume and run-now calls, the schedules'
 * views and their run entities' locks after quiet. See docs/concepts/model-based-test.md.
 *
 * - (r1) one chain per (schedule, scheduled time) at most, and no run entity left with a step
 *   scheduled after quiet;
 * - (r2) no run the policies rule out: a run is for a time of its expression (or a run-now's),
 *   after a tick by code that declares it came at or past that time; not when the first such tick
 *   came later than the grace (`each`, `skip`), nor when the expression's next time had come by
 *   then (`coalesce`, `skip`: only the latest time is run);
 * - (r3) none missed: a time of a per-tick schedule that a tick planned is run, where the model
 *   knows it was planned (see `owedTimes`); for the fixed-entity schedule (overlap `skip`, whose
 *   skips depend on whether its last run still ran), the times known planned and not run are at
 *   most the skips its view counts; a per-tick schedule's view counts no more skips than it has
 *   times not run between the first and the last tick of code declaring it (its entity is its own:
 *   nothing overlaps it); and no schedule's view counts more runs started than it had chains;
 * - (r4) run-now once per id: every answer to one id names one time, the runs of one id's calls
 *   are one chain, and an answer `started` has its run.
 */
import type { Observations } from './observations';
import type { Violation } from './oracle';
import { RECURRING_ROUTE, SCHEDULES, declaresIt, type ControlSeen, type ModelSchedule, type TickSeen } from './recurring';

/** The chains of each (schedule, scheduled time), from the tasks of the schedules' first steps. */
function runsByTime(o: Observations): Map<string, { schedule: string; at: number; chains: Set<string> }> {
  const out = new Map<string, { schedule: string; at: number; chains: Set<string> }>();
  for (const t of o.tasks) {
    if (t.path !== RECURRING_ROUTE) continue;
    let body: { schedule?: unknown; scheduledAt?: unknown };
    try { body = JSON.parse(t.body) as typeof body; } catch { continue; }
    if (typeof body.schedule !== 'string' || typeof body.scheduledAt !== 'string') continue;
    const id = `${body.schedule} ${body.scheduledAt}`;
    const entry = out.get(id) ?? { schedule: body.schedule, at: Date.parse(body.scheduledAt), chains: new Set<string>() };
    entry.chains.add(t.chain ?? '');
    out.set(id, entry);
  }
  return out;
}

export function recurringRules(o: Observations): Violation[] {
  const seen = o.recurring;
  const out: Violation[] = [];
  const runs = runsByTime(o);
  const iso = (ms: number): string => new Date(ms).toISOString();

  // (r1)
  for (const r of runs.values()) {
    if (r.chains.size > 1) out.push({ promise: 'r', text: `schedule ${r.schedule}'s time ${iso(r.at)} started ${r.chains.size} chains` });
  }
  for (const [entity, state] of seen.finalStates) {
    if (state === 'scheduled') out.push({ promise: 'r', text: `the run entity ${entity} still has a step scheduled after deliveries and sweeps ran until quiet` });
  }

  // (r4) run-now
  const calls = new Map<string, string>(); // `${schedule} ${clock}` -> id: each call has a clock of its own
  const byId = new Map<string, typeof seen.runNows>();
  for (const c of seen.runNows) {
    calls.set(`${c.schedule} ${c.now}`, c.id);
    const k = `${c.schedule} ${c.id}`;
    byId.set(k, [...(byId.get(k) ?? []), c]);
  }
  for (const [k, list] of byId) {
    const ats = new Set(list.flatMap((c) => (c.answer ? [c.answer.at] : [])));
    if (ats.size > 1) out.push({ promise: 'r', text: `runScheduleNow(${k.replace(' ', ', ')}) answered ${ats.size} times for one id: ${[...ats].join(', ')}` });
    for (const c of list) {
      if (c.answer?.outcome === 'started' && !runs.has(`${c.schedule} ${c.answer.at}`)) out.push({ promise: 'r', text: `runScheduleNow(${c.schedule}, ${c.id}) answered started for ${c.answer.at}; no task of that run was made` });
    }
  }
  const chainsOfId = new Map<string, Set<string>>();
  for (const r of runs.values()) {
    if (r.at % 60_000 === 0) continue; // a tick's time
    const id = calls.get(`${r.schedule} ${r.at}`);
    if (id === undefined) {
      out.push({ promise: 'r', text: `schedule ${r.schedule} ran for ${iso(r.at)}, a time neither of its expression nor of a run-now` });
      continue;
    }
    const k = `${r.schedule} ${id}`;
    const set = chainsOfId.get(k) ?? new Set<string>();
    for (const c of r.chains) set.add(c);
    chainsOfId.set(k, set);
  }
  for (const [k, chains] of chainsOfId) {
    if (chains.size > 1) out.push({ promise: 'r', text: `runScheduleNow(${k.replace(' ', ', ')}) started ${chains.size} chains under one id` });
  }

  for (const s of SCHEDULES) out.push(...scheduleRules(o, s, runs));
  return out;
}

/** (r2) and (r3) for one schedule. */
function scheduleRules(o: Observations, s: ModelSchedule, runs: ReturnType<typeof runsByTime>): Violation[] {
  const seen = o.recurring;
  const out: Violation[] = [];
  const iso = (ms: number): string => new Date(ms).toISOString();
  const attempts = seen.ticks.filter((t) => declaresIt(t.declares, s.name)).sort((a, b) => a.serial - b.serial);
  const firstAttempt = (t: number): number | undefined => attempts.find((a) => a.now >= t)?.now;
  const ran = new Map<number, Set<string>>();
  for (const r of runs.values()) if (r.schedule === s.name && r.at % 60_000 === 0) ran.set(r.at, r.chains);

  // (r2) no run the policies rule out.
  for (const at of ran.keys()) {
    const first = firstAttempt(at);
    if (at % s.periodMs !== 0) out.push({ promise: 'r', text: `schedule ${s.name} (${s.cron}) ran for ${iso(at)}, not a time of its expression` });
    else if (first === undefined) out.push({ promise: 'r', text: `schedule ${s.name} ran for ${iso(at)}; no tick of code declaring it came at or after that time` });
    else if (s.misfire !== 'coalesce' && first - at > s.graceMs) out.push({ promise: 'r', text: `schedule ${s.name} (misfire ${s.misfire}, grace ${s.graceMs / 1000} s) ran for ${iso(at)}, though the first tick at or after it came ${(first - at) / 1000} s late` });
    else if (s.misfire !== 'each' && first >= at + s.periodMs) out.push({ promise: 'r', text: `schedule ${s.name} (misfire ${s.misfire}) ran for ${iso(at)}, though the first tick at or after it came at ${iso(first)}, when ${iso(at + s.periodMs)} was the latest time` });
  }

  // (r3) none missed.
  const owed = owedTimes(seen.ticks, seen.controls, s);
  const planned = owed.filter(({ at, by }) => by.now - at < s.periodMs || s.misfire === 'each');
  if (s.key === 'per-tick') {
    for (const { at, by, settledLater } of planned) {
      if (by.now - at > s.graceMs || ran.has(at)) continue;
      if (!settledLater) continue;
      out.push({ promise: 'r', text: `schedule ${s.name} (misfire ${s.misfire}, grace ${s.graceMs / 1000} s) never ran for ${iso(at)}: the tick at ${iso(by.now)} (operation ${by.op}, ${by.note}) planned it, the schedule active and declared` });
    }
  }
  const view = seen.views.find((v) => v.name === s.name);
  if (view && s.key === 'fixed') {
    const missed = planned.filter(({ at, settledLater }) => settledLater && !ran.has(at));
    if (missed.length > view.skipped) out.push({ promise: 'r', text: `schedule ${s.name} (overlap ${s.overlap}) never ran for ${missed.length} time(s) ticks planned (${missed.slice(0, 3).map(({ at }) => iso(at)).join(', ')}${missed.length > 3 ? ', …' : ''}); its view counts ${view.skipped} skipped` });
  }
  if (view && s.key === 'per-tick' && attempts.length > 0) {
    // A per-tick run's entity is its own: no overlap skips it, so each skip is a time not run (missed
    // beyond the misfire policy), between the first and the last tick of code declaring it.
    const first = Math.min(...attempts.map((t) => t.now));
    const last = Math.max(...attempts.map((t) => t.now));
    let unrun = 0;
    for (let at = Math.floor(first / s.periodMs) * s.periodMs + s.periodMs; at <= last; at += s.periodMs) if (!ran.has(at)) unrun += 1;
    if (view.skipped > unrun) out.push({ promise: 'r', text: `schedule ${s.name}'s view counts ${view.skipped} skipped; only ${unrun} of its times from ${iso(first)} to ${iso(last)} did not run (a per-tick run is never skipped for an overlap)` });
  }
  if (view) {
    const chains = new Set([...runs.values()].filter((r) => r.schedule === s.name).flatMap((r) => [...r.chains]));
    if (view.started > chains.size) out.push({ promise: 'r', text: `schedule ${s.name}'s view counts ${view.started} runs started; ${chains.size} chain(s) were` });
  }
  return out;
}

/**
 * The times of `s` a tick is known to have planned: a time after the start of a stretch in which
 * the schedule was surely active and declared (from a whole tick of code declaring it, or an
 * answered resume), with a whole tick of such code at or after it before anything could have
 * paused it (any pause call) or removed it (any tick of code that does not declare it, whatever
 * came of it, or one at once with that tick). `by` is that first whole tick. `settledLater` says
 * whether its runs were surely started: that tick could start all it ran (`failed` 0), or no tick
 * that could remove the schedule (and drop its pending runs) came after it.
 */
export function owedTimes(ticks: readonly TickSeen[], controls: readonly ControlSeen[], s: ModelSchedule): Array<{ at: number; by: TickSeen; settledLater: boolean }> {
  type Event = { tick: TickSeen } | { control: ControlSeen };
  const events: Event[] = [
    ...ticks.map((tick) => ({ tick })),
    ...controls.filter((c) => c.schedule === s.name).map((control) => ({ control })),
  ].sort((a, b) => serialOf(a) - serialOf(b));
  const foreignSerials = ticks.filter((t) => !declaresIt(t.declares, s.name)).map((t) => t.serial);
  const lastForeign = Math.max(-1, ...foreignSerials);
  const foreignOps = new Set(ticks.filter((t) => !declaresIt(t.declares, s.name)).map((t) => t.op));
  let declared = false;
  let maybePaused = false;
  let maybeRemoved = false;
  let segment: { start: number; bound: number } | undefined;
  const out: Array<{ at: number; by: TickSeen; settledLater: boolean }> = [];
  let lastOp: number | undefined;
  for (const e of events) {
    const op = 'tick' in e ? e.tick.op : e.control.op;
    if (lastOp !== undefined && op !== lastOp && foreignOps.has(lastOp)) {
      maybeRemoved = true;
      segment = undefined;
    }
    lastOp = op;
    if ('control' in e) {
      const c = e.control;
      if (c.action === 'pause') {
        maybePaused = true;
        segment = undefined;
      } else if (c.answered) {
        maybePaused = false;
        if (declared && !maybeRemoved && !segment) segment = { start: c.now, bound: c.now };
      }
      continue;
    }
    const t = e.tick;
    if (!declaresIt(t.declares, s.name) || !t.ok || foreignOps.has(t.op)) continue;
    if (!declared || maybeRemoved) {
      declared = true;
      maybeRemoved = false;
      if (!maybePaused) segment = { start: t.now, bound: t.now };
      continue;
    }
    if (!segment) continue;
    const settledLater = t.failed === 0 || t.serial > lastForeign;
    for (let at = Math.floor(segment.bound / s.periodMs) * s.periodMs + s.periodMs; at <= t.now; at += s.periodMs) {
      if (at > segment.start) out.push({ at, by: t, settledLater });
    }
    segment.bound = Math.max(segment.bound, t.now);
  }
  return out;
}

function serialOf(e: { tick: TickSeen } | { control: ControlSeen }): number {
  return 'tick' in e ? e.tick.serial : e.control.serial;
}
