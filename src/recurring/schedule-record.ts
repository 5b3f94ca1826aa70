/**
 * A schedule's record (`LockerSchedule`, one per schedule name, in the Locker's `scheduleNamespace`), as pure
 * functions: its key, the properties it is stored with, and how it is read back. It holds the
 * declaration's spec (for the operator), the schedule's state, its next tick, the runs planned but
 * not yet confirmed started (`pending`: a tick that crashed after planning them starts them on the
 * next tick, under the same kickoff id), a run queued behind a live one, and the last run.
 *
 * Only `due` and `createdAt` (the operator's list, newest first) are indexed. `due` is the earliest
 * time the tick must look at the record again (the next tick, or now while runs are pending or
 * queued); a paused or removed schedule has none, so the tick's query (`due <= now`, a built-in
 * single-property index) never reads it.
 */
import { Key } from '@google-cloud/datastore';
import type { Properties } from '../types';
import { storedCount, storedJson } from '../store/record-values';
import type { ScheduleSpec } from './declaration';
import type { LastRun } from './recurring-types';

/** The kind of a schedule's record. */
export const SCHEDULE_KIND = 'LockerSchedule';

/** A run planned by a tick: the tick it is for, and its entity. */
export interface PlannedRun {
  /** The scheduled time (before jitter). */
  at: Date;
  /** The run's entity, as the status page writes keys, and its namespace. */
  key: string;
  namespace: string;
}

/** An operator's "run now": its id, the time it is for, and whether its outcome was counted (`settled`). */
export interface NowRun {
  id: string;
  at: Date;
  settled?: true;
}

/** A schedule's record, as read. */
export interface ScheduleRecord {
  name: string;
  spec: ScheduleSpec;
  specHash: string;
  state: 'active' | 'paused' | 'removed';
  /** The next tick to run (kept while paused, shown as the tick it would have been). */
  next?: Date;
  /** The last tick planned: the floor of the next tick's missed times. */
  lastTick?: Date;
  pending: PlannedRun[];
  /** The last operator's "run now" ids, with the time each run is for, and whether its outcome was counted. */
  nowRuns: NowRun[];
  /** A run waiting for the previous one to end. */
  queued?: Date;
  last?: LastRun;
  started: number;
  skipped: number;
  createdAt: Date;
  declaredAt: Date;
}

/** The record's key, in the Locker's `scheduleNamespace`. */
export function scheduleKey(name: string, namespace: string): Key {
  return new Key({ ...(namespace !== '' && { namespace }), path: [SCHEDULE_KIND, name] });
}

/** Properties never queried. */
export const SCHEDULE_UNINDEXED = ['name', 'spec', 'specHash', 'state', 'next', 'lastTick', 'pending', 'nowRuns', 'queued', 'last', 'started', 'skipped', 'declaredAt'] as const;

/** When the tick must look at the record again: now-ish while runs wait, else the next tick; none while paused or removed. */
export function dueOf(r: ScheduleRecord): Date | undefined {
  const waiting = [...r.pending.map((p) => p.at), ...(r.queued ? [r.queued] : [])];
  if (waiting.length > 0) return new Date(Math.min(...waiting.map((d) => d.getTime())));
  return r.state === 'active' ? r.next : undefined;
}

/** The record's stored properties. */
export function scheduleProperties(r: ScheduleRecord): Properties {
  const p: Properties = {
    name: r.name, spec: JSON.stringify(r.spec), specHash: r.specHash, state: r.state,
    pending: JSON.stringify(r.pending.map((run) => ({ at: run.at.toISOString(), key: run.key, namespace: run.namespace }))),
    nowRuns: JSON.stringify(r.nowRuns.map((n) => ({ id: n.id, at: n.at.toISOString(), ...(n.settled && { settled: true }) }))),
    started: r.started, skipped: r.skipped, createdAt: r.createdAt, declaredAt: r.declaredAt,
  };
  if (r.next) p.next = r.next;
  if (r.lastTick) p.lastTick = r.lastTick;
  if (r.queued) p.queued = r.queued;
  if (r.last) p.last = JSON.stringify({ ...r.last, at: r.last.at.toISOString(), settledAt: r.last.settledAt.toISOString() });
  const due = dueOf(r);
  if (due) p.due = due;
  return p;
}

/** Reads a record; undefined when absent or not one. */
export function readSchedule(p: Properties | undefined): ScheduleRecord | undefined {
  if (!p || typeof p.name !== 'string' || typeof p.specHash !== 'string' || !(p.createdAt instanceof Date)) return undefined;
  const spec = storedJson(p.spec);
  if (!isSpec(spec)) return undefined;
  const r: ScheduleRecord = {
    name: p.name, spec, specHash: p.specHash,
    state: p.state === 'paused' || p.state === 'removed' ? p.state : 'active',
    pending: readPending(p.pending), nowRuns: readNowRuns(p.nowRuns), started: storedCount(p.started), skipped: storedCount(p.skipped),
    createdAt: p.createdAt, declaredAt: p.declaredAt instanceof Date ? p.declaredAt : p.createdAt,
  };
  if (p.next instanceof Date) r.next = p.next;
  if (p.lastTick instanceof Date) r.lastTick = p.lastTick;
  if (p.queued instanceof Date) r.queued = p.queued;
  const last = readLast(p.last);
  if (last) r.last = last;
  return r;
}

function readPending(value: unknown): PlannedRun[] {
  const parsed = storedJson(value);
  if (!Array.isArray(parsed)) return [];
  return parsed.flatMap((run: unknown): PlannedRun[] => {
    if (typeof run !== 'object' || run === null) return [];
    const { at, key, namespace } = run as Record<string, unknown>;
    const when = typeof at === 'string' ? new Date(at) : undefined;
    return when && !Number.isNaN(when.getTime()) && typeof key === 'string' && typeof namespace === 'string' ? [{ at: when, key, namespace }] : [];
  });
}

function readNowRuns(value: unknown): NowRun[] {
  const parsed = storedJson(value);
  if (!Array.isArray(parsed)) return [];
  return parsed.flatMap((run: unknown): NowRun[] => {
    if (typeof run !== 'object' || run === null) return [];
    const { id, at, settled } = run as Record<string, unknown>;
    const when = typeof at === 'string' ? new Date(at) : undefined;
    if (typeof id !== 'string' || !when || Number.isNaN(when.getTime())) return [];
    return [settled === true ? { id, at: when, settled: true } : { id, at: when }];
  });
}

function readLast(value: unknown): LastRun | undefined {
  const parsed = storedJson(value);
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const v = parsed as Record<string, unknown>;
  const at = typeof v.at === 'string' ? new Date(v.at) : undefined;
  const settledAt = typeof v.settledAt === 'string' ? new Date(v.settledAt) : undefined;
  if (!at || Number.isNaN(at.getTime()) || !settledAt || Number.isNaN(settledAt.getTime())) return undefined;
  if (v.outcome !== 'started' && v.outcome !== 'busy' && v.outcome !== 'failed' && v.outcome !== 'skipped') return undefined;
  const last: LastRun = { at, outcome: v.outcome, settledAt };
  if (typeof v.key === 'string') last.key = v.key;
  if (typeof v.namespace === 'string') last.namespace = v.namespace;
  if (typeof v.chain === 'string') last.chain = v.chain;
  if (typeof v.error === 'string') last.error = v.error;
  return last;
}

function isSpec(value: unknown): value is ScheduleSpec {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.cron === 'string' && typeof v.timeZone === 'string' && typeof v.path === 'string'
    && (v.overlap === 'skip' || v.overlap === 'allow' || v.overlap === 'queue')
    && (v.misfire === 'coalesce' || v.misfire === 'each' || v.misfire === 'skip')
    && typeof v.graceMs === 'number' && typeof v.jitterMs === 'number' && (v.keyMode === 'fixed' || v.keyMode === 'per-tick');
}
