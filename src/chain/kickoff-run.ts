/**
 * The record of a bulk kickoff (`LockerKickoffRun`, one per `kickoffId`), as pure functions: its
 * key, the properties it is written with and read back from, and what each call does to it
 * (`begin` when `scheduleMany()` starts, `end` when it returns). It lives in the default namespace
 * (a kickoff's items may span namespaces), named by the kickoff's `lock_run` (`kickoffRun`, `rules/kickoff-plan.ts`: short,
 * and never a reserved `__…__` name whatever the kickoff id), and is kept after the work finished.
 * Only `startedAt` is indexed: `locker.inspect().kickoffs()` lists the newest first.
 */
import { Key } from '@google-cloud/datastore';
import type { Properties } from '../types';
import { storedCount, storedJson } from '../store/record-values';

/** The kind of a kickoff's record. */
export const KICKOFF_RUN_KIND = 'LockerKickoffRun';

/** Kinds and namespaces listed on a record at most (the rest are counted in `moreKinds`). */
export const MAX_KINDS = 20;

/** Where the items of a kickoff are: a kind in a namespace, with how many items. */
export interface RunKind {
  /** The items' kind. */
  kind: string;
  /** Their namespace; empty for the default one. */
  namespace: string;
  /** How many items of the call are of this kind in this namespace. */
  items: number;
}

/** How a `scheduleMany()` call settled its items (its result's counts). */
export interface KickoffSettled {
  /** Chains started, or found started by an earlier call with the same id. */
  started: number;
  /** Entities running another chain's step, left alone. */
  busy: number;
  /** Items not started. */
  failed: number;
}

/** A kickoff's record, as read. */
export interface KickoffRun {
  /** The kickoff's id, as the caller gave it (or the random one). */
  kickoffId: string;
  /** Its chains' `lock_run`. */
  run: string;
  /** Items in the last call. */
  total: number;
  /** Their kinds and namespaces (at most {@link MAX_KINDS}). */
  kinds: RunKind[];
  /** Kinds and namespaces past {@link MAX_KINDS}, not listed. */
  moreKinds: number;
  /** When the first call began. */
  startedAt: Date;
  /** Calls made with this id (a call made again after a crash, or to be sure, updates the same record). */
  calls: number;
  /** `running` while a call is under way (or one crashed before its end), `finished` once the last one returned. */
  state: 'running' | 'finished';
  /** As the last call to end settled its items: chains started (or found started), busy entities, items not started. */
  settled?: KickoffSettled;
  /** When the last call returned. */
  finishedAt?: Date;
}

/** What one call is: its kickoff, its items' kinds and namespaces, and when it began. */
export interface KickoffCall {
  kickoffId: string;
  run: string;
  total: number;
  kinds: RunKind[];
  now: Date;
}

/** The record's key. */
export function kickoffRunKey(run: string): Key {
  return new Key({ path: [KICKOFF_RUN_KIND, run] });
}

/** Properties never queried. */
export const KICKOFF_RUN_UNINDEXED = ['kickoffId', 'run', 'total', 'kinds', 'moreKinds', 'calls', 'state', 'settled', 'finishedAt'] as const;

/** A call begins: the record made, or the one an earlier call made updated (its first start kept). */
export function begin(found: KickoffRun | undefined, call: KickoffCall): KickoffRun {
  const kinds = call.kinds.slice(0, MAX_KINDS);
  const record: KickoffRun = {
    kickoffId: call.kickoffId, run: call.run, total: call.total, kinds, moreKinds: call.kinds.length - kinds.length,
    startedAt: found?.startedAt ?? call.now, calls: (found?.calls ?? 0) + 1, state: 'running',
  };
  if (found?.settled) record.settled = found.settled;
  return record;
}

/** A call returned, having settled its items so. */
export function end(found: KickoffRun, settled: KickoffSettled, now: Date): KickoffRun {
  return { ...found, state: 'finished', settled: { started: settled.started, busy: settled.busy, failed: settled.failed }, finishedAt: now };
}

/** The kinds and namespaces of `items`, most items first. */
export function kindsOf(keys: readonly { kind: string; namespace?: string | undefined }[]): RunKind[] {
  const by = new Map<string, RunKind>();
  for (const key of keys) {
    const namespace = key.namespace ?? '';
    const id = `${namespace}\n${key.kind}`;
    const row = by.get(id);
    if (row) row.items++;
    else by.set(id, { kind: key.kind, namespace, items: 1 });
  }
  return [...by.values()].sort((a, b) => b.items - a.items || a.kind.localeCompare(b.kind) || a.namespace.localeCompare(b.namespace));
}

/** The record's stored properties. */
export function kickoffRunProperties(r: KickoffRun): Properties {
  const p: Properties = {
    kickoffId: r.kickoffId, run: r.run, total: r.total, kinds: JSON.stringify(r.kinds), moreKinds: r.moreKinds,
    startedAt: r.startedAt, calls: r.calls, state: r.state,
  };
  if (r.settled) p.settled = JSON.stringify(r.settled);
  if (r.finishedAt) p.finishedAt = r.finishedAt;
  return p;
}

/** Reads a record; undefined when absent or not one. */
export function readKickoffRun(p: Properties | undefined): KickoffRun | undefined {
  if (!p || typeof p.kickoffId !== 'string' || typeof p.run !== 'string' || !(p.startedAt instanceof Date)) return undefined;
  const r: KickoffRun = {
    kickoffId: p.kickoffId, run: p.run, total: storedCount(p.total), kinds: readKinds(p.kinds), moreKinds: storedCount(p.moreKinds),
    startedAt: p.startedAt, calls: storedCount(p.calls), state: p.state === 'finished' ? 'finished' : 'running',
  };
  const settled = storedJson(p.settled);
  if (isSettled(settled)) r.settled = { started: settled.started, busy: settled.busy, failed: settled.failed };
  if (p.finishedAt instanceof Date) r.finishedAt = p.finishedAt;
  return r;
}

function readKinds(value: unknown): RunKind[] {
  const parsed = storedJson(value);
  if (!Array.isArray(parsed)) return [];
  return parsed.flatMap((k: unknown): RunKind[] => {
    if (typeof k !== 'object' || k === null) return [];
    const { kind, namespace, items } = k as Record<string, unknown>;
    return typeof kind === 'string' && kind !== '' && typeof namespace === 'string' ? [{ kind, namespace, items: storedCount(items) }] : [];
  });
}

function isSettled(value: unknown): value is KickoffSettled {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return [v.started, v.busy, v.failed].every((n) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0);
}
