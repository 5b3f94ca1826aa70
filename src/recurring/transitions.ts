/**
 * Every change to a schedule's record, as pure functions of the record read, the declaration and
 * the time: declared, planned by a tick, settled after its runs were started, paused, resumed.
 * Each returns the record to write (or undefined: nothing to write) and what the caller is to do,
 * and nothing here reads or writes the store (`tick.ts` carries the decisions out).
 */
import type { Declaration } from './declaration';
import type { LastRun } from './recurring-types';
import { MAX_LISTED_TIMES, type CronTimes } from './cron-times';
import type { PlannedRun, ScheduleRecord } from './schedule-record';

/** A declaration seen again this long after the last is written again (its `declaredAt`), at most. */
export const DECLARED_REFRESH_MS = 60 * 60_000;

/** The record as declared now: a new one, the changed one, or undefined when it needs no write. */
export function declared(found: ScheduleRecord | undefined, d: Declaration, now: Date): ScheduleRecord | undefined {
  if (!found) {
    return { name: d.name, spec: d.spec, specHash: d.specHash, state: 'active', ...nextOf(d, now), pending: [], nowRuns: [], started: 0, skipped: 0, createdAt: now, declaredAt: now };
  }
  if (found.state === 'removed') {
    // Declared again after an instance found it undeclared: it runs from now on (the ticks while removed are not made up).
    return { ...found, spec: d.spec, specHash: d.specHash, state: 'active', ...nextOf(d, now), lastTick: undefined, declaredAt: now };
  }
  if (found.specHash !== d.specHash) {
    const timesChanged = found.spec.cron !== d.spec.cron || found.spec.timeZone !== d.spec.timeZone;
    const next = timesChanged ? nextOf(d, now) : { next: found.next };
    return { ...found, spec: d.spec, specHash: d.specHash, ...next, ...(timesChanged && { lastTick: undefined }), declaredAt: now };
  }
  if (now.getTime() - found.declaredAt.getTime() >= DECLARED_REFRESH_MS) return { ...found, declaredAt: now };
  return undefined;
}

/** A due record no declaration of the ticking code names: it stops (its pending runs are dropped with it). */
export function removed(found: ScheduleRecord): ScheduleRecord {
  return { ...found, state: 'removed', pending: [], queued: undefined };
}

/** What a tick plans for one record. */
export interface TickPlan {
  /** The record to write. */
  record: ScheduleRecord;
  /** Runs to start now (pending ones from an earlier tick first). */
  starts: PlannedRun[];
  /** Ticks skipped by this plan. */
  skipped: number;
  /** Whether a run was queued behind a live one. */
  queued: boolean;
}

/** Where a run's entity is, for a tick; an Error when the declaration's `key` function failed. */
export type RunPlace = (at: Date) => { key: string; namespace: string } | Error;

/**
 * A tick at `now` on a due record. `live` says whether the schedule's last run still runs (its
 * chain holds its entity, scheduled). Pending runs are started again (an earlier tick planned
 * them and may have crashed); the ticks due since are chosen by the misfire policy, and the
 * overlap policy says whether they start beside a live run, wait, or are skipped.
 */
export function planTick(record: ScheduleRecord, d: Declaration, now: Date, live: boolean, place: RunPlace): TickPlan & { failed: { at: Date; error: Error }[] } {
  const starts = [...record.pending];
  const failed: { at: Date; error: Error }[] = [];
  let skipped = 0;
  let queued = record.queued;
  let queuedNow = false;
  const runAt = (at: Date): PlannedRun | undefined => {
    const where = place(at);
    if (where instanceof Error) {
      failed.push({ at, error: where });
      return undefined;
    }
    return { at, ...where };
  };
  if (record.state !== 'active') return { record, starts, skipped, queued: false, failed };
  if (queued && !live && starts.length === 0) {
    const run = runAt(queued);
    if (run) starts.push(run);
    queued = undefined;
  }
  let next = record.next;
  let lastTick = record.lastTick;
  if (next && next <= now) {
    const floor = new Date(next.getTime() - 1);
    const { due, missed } = dueTimes(d, record.spec.misfire, record.spec.graceMs, floor, now);
    skipped += missed;
    next = d.times.next(now);
    lastTick = due.at(-1) ?? d.times.latestUpTo(now, floor) ?? lastTick;
    const busy = live || starts.length > 0;
    if (record.spec.overlap === 'allow') {
      for (const at of due) {
        const run = runAt(at);
        if (run) starts.push(run);
      }
    } else {
      // Without `allow`, a tick starts one run at most: the newest due.
      skipped += Math.max(0, due.length - 1);
      const newest = due.at(-1);
      if (newest && !busy) {
        const run = runAt(newest);
        if (run) starts.push(run);
      } else if (newest && record.spec.overlap === 'skip') {
        skipped += 1;
      } else if (newest) {
        if (queued) skipped += 1;
        queued = newest;
        queuedNow = true;
      }
    }
  }
  const out: ScheduleRecord = { ...record, pending: dedupe(starts), skipped: record.skipped + skipped };
  setOptional(out, 'next', next);
  setOptional(out, 'lastTick', lastTick);
  setOptional(out, 'queued', queued);
  return { record: out, starts: out.pending, skipped, queued: queuedNow, failed };
}

/** The ticks in (`floor`, `now`] to run under `misfire`, and how many of them are not run. */
export function dueTimes(d: Declaration, misfire: ScheduleRecord['spec']['misfire'], graceMs: number, floor: Date, now: Date): { due: Date[]; missed: number } {
  if (misfire === 'coalesce') {
    const latest = d.times.latestUpTo(now, floor);
    return { due: latest ? [latest] : [], missed: 0 };
  }
  const graceFloor = new Date(Math.max(floor.getTime(), now.getTime() - graceMs - 1));
  const all = d.times.timesBetween(floor, graceFloor, MAX_LISTED_TIMES).length;
  const within = d.times.timesBetween(graceFloor, now, MAX_LISTED_TIMES);
  if (misfire === 'each') return { due: within, missed: all };
  const latest = within.at(-1);
  return { due: latest ? [latest] : [], missed: all + Math.max(0, within.length - 1) };
}

/** What became of one run a tick tried to start. */
export interface RunOutcome {
  run: PlannedRun;
  outcome: 'started' | 'busy' | 'failed';
  chain?: string;
  error?: string;
  /** The store could not be reached: the run stays pending, for the next tick. */
  retry: boolean;
}

/** The record once a tick's runs settled: the settled ones leave `pending`, the last becomes `last`. */
export function settled(record: ScheduleRecord, outcomes: readonly RunOutcome[], now: Date): ScheduleRecord {
  // A run no longer pending was settled by another tick that started it too (the same kickoff id
  // found it started): counted once, by whichever settled it first.
  const pending = new Set(record.pending.map(runId));
  const done = outcomes.filter((o) => !o.retry && pending.has(runId(o.run)));
  if (done.length === 0) return record;
  const ids = new Set(done.map((o) => runId(o.run)));
  let { started, skipped, queued } = record;
  let last = record.last;
  for (const o of [...done].sort((a, b) => a.run.at.getTime() - b.run.at.getTime())) {
    if (o.outcome === 'started') started += 1;
    if (o.outcome === 'busy') {
      // The entity runs another chain (the schedule's previous run, or one of the app's): an overlap.
      if (record.spec.overlap === 'queue' && !queued) queued = o.run.at;
      else skipped += 1;
    }
    const next: LastRun = { at: o.run.at, outcome: o.outcome, key: o.run.key, namespace: o.run.namespace, settledAt: now };
    if (o.chain) next.chain = o.chain;
    if (o.error) next.error = o.error;
    // A busy run does not replace a started last run: that one is still the one running.
    if (o.outcome !== 'busy' || last?.outcome !== 'started') last = next;
  }
  const out: ScheduleRecord = { ...record, pending: record.pending.filter((p) => !ids.has(runId(p))), started, skipped };
  setOptional(out, 'queued', queued);
  setOptional(out, 'last', last);
  return out;
}

/** A run's last, for runs that failed before they could be started (their key could not be made). */
export function failedBeforeStart(record: ScheduleRecord, failures: readonly { at: Date; error: Error }[], now: Date): ScheduleRecord {
  const newest = [...failures].sort((a, b) => a.at.getTime() - b.at.getTime()).at(-1);
  if (!newest) return record;
  return { ...record, last: { at: newest.at, outcome: 'failed', error: String(newest.error.message).slice(0, 500), settledAt: now } };
}

/** An operator paused it: no tick runs until it is resumed (its pending runs still start). */
export function paused(record: ScheduleRecord): ScheduleRecord {
  return { ...record, state: 'paused' };
}

/** An operator resumed it: it runs from the next tick after `now` (the ticks while paused are not made up). */
export function resumed(record: ScheduleRecord, times: CronTimes, now: Date): ScheduleRecord {
  const out: ScheduleRecord = { ...record, state: 'active' };
  setOptional(out, 'next', times.next(now));
  return out;
}

/** Run-now ids remembered per schedule (a confirm page submitted again finds its run). */
export const NOW_RUNS_KEPT = 5;

/** An operator's "run now" under `id`: the time its run is for (the first call's, for an id seen before) and the record to write. */
export function runNow(record: ScheduleRecord, id: string, now: Date): { at: Date; record: ScheduleRecord | undefined } {
  const earlier = record.nowRuns.find((r) => r.id === id);
  if (earlier) return { at: earlier.at, record: undefined };
  return { at: now, record: { ...record, nowRuns: [...record.nowRuns, { id, at: now }].slice(-NOW_RUNS_KEPT) } };
}

/**
 * The record once a run-now call under `id` had its answer: its run settled as a tick's is (`started`
 * counted, `last` set), and the id marked counted when it started. A call made again with the id
 * finds the run its first call started (the kickoff id is the same): that start is counted once,
 * whichever call settled it first; undefined then (nothing to write).
 */
export function settledNow(record: ScheduleRecord, id: string, run: PlannedRun, outcome: RunOutcome, now: Date): ScheduleRecord | undefined {
  const entry = record.nowRuns.find((r) => r.id === id);
  if (entry?.counted && outcome.outcome === 'started') return undefined;
  const next = settled({ ...record, pending: [...record.pending, run] }, [outcome], now);
  if (outcome.outcome !== 'started') return next;
  return { ...next, nowRuns: next.nowRuns.map((r) => (r.id === id ? { ...r, counted: true } : r)) };
}

/** The identity of a planned run (its tick and entity). */
export function runId(run: PlannedRun): string {
  return `${run.at.toISOString()}\n${run.namespace}\n${run.key}`;
}

function nextOf(d: Declaration, now: Date): { next?: Date } {
  const next = d.times.next(now);
  return next ? { next } : {};
}

function dedupe(runs: PlannedRun[]): PlannedRun[] {
  const seen = new Set<string>();
  return runs.filter((r) => {
    const id = runId(r);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

function setOptional<K extends 'next' | 'lastTick' | 'queued' | 'last'>(record: ScheduleRecord, name: K, value: ScheduleRecord[K] | undefined): void {
  if (value === undefined) delete record[name];
  else record[name] = value;
}
