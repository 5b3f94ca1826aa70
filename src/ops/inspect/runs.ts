/**
 * Kickoffs and fan-outs as rows of their own (`locker.inspect().kickoffs()`, `kickoff()`,
 * `fanOuts()`, `fanOut()`): the record of each (a `LockerKickoffRun`, a `LockerFanOut` header),
 * listed newest first, with its progress counted from its chains' `lock_run`.
 *
 * Progress is four counts per kind and namespace of the run (its chains scheduled, complete,
 * failed, cancelled: `Store.countLocks` with `run`), and the oldest pending chain is one query per
 * kind and namespace (`lock_run`, scheduled, oldest `lock_ts` first, limit 1); all at once. Their
 * number depends on the kinds of the run, not on its chains. A fan-out's children are counted the
 * same way, by `f:<fan-out id>`, not from their child records: those are read by key only (their
 * state is not indexed), and reading them all is proportional to the children.
 */
import type { Key } from '@google-cloud/datastore';
import { KICKOFF_RUN_KIND, kickoffRunKey, readKickoffRun, type KickoffRun, type KickoffSettled, type RunKind } from '../../chain/kickoff-run';
import { decodeKey } from '../../keys/key-codec';
import { keyIdentity } from '../../keys/key-path';
import type { KeyWriting } from '../../keys/key-writing';
import { fanOutRun, kickoffRun } from '../../rules/kickoff-plan';
import { HEADER_KIND, headerKey, readHeader, type ChildCounts, type FanOutState, type Header } from '../../fanout/records';
import { MAX_COUNT_CAP } from '../../store/lock-query';
import type { StoreReads } from '../../store/reads';
import { StepState, type LockCount } from '../../types';
import { ConfigError } from '../../errors/errors';

/** A run's chains by state, now (each a count up to the run's total, at least 1; `exact: false` past it). */
export interface RowProgress {
  /** Items (a kickoff's last call) or children (a fan-out's, once sealed). */
  total: number;
  /** Chains that carry the run's `lock_run` now: the four below together. */
  started: number;
  /** Chains scheduled or running: not yet ended. */
  pending: LockCount;
  /** Chains complete. */
  complete: LockCount;
  /** Chains failed for good. */
  failed: LockCount;
  /** Chains an operator cancelled. */
  cancelled: LockCount;
}

/** An entity, as the operator's rows name it. */
export interface EntityRef<K = Key> {
  /** Its key: a `DocumentReference` on a `FirestoreStore`. */
  key: K;
  /** The key as `X-Lock-Key` encodes it (the status page's links carry it). */
  encodedKey: string;
  /** As the store's users write it: `Order:42/Line:"a"`; a document's path on a `FirestoreStore`. */
  keyPath: string;
}

/** The oldest chain of a run still pending. */
export interface OldestPending<K = Key> extends EntityRef<K> {
  /** When it last progressed (`lock_ts`). */
  since: Date;
  /** How long ago, ms. */
  ageMs: number;
}

/** A kickoff, as a row. */
export interface KickoffRow<K = Key> {
  /** The kickoff's id, as `scheduleMany()` was given it (or returned it). */
  kickoffId: string;
  /** Its chains' `lock_run`: pass it as `list({ run })` to list them by state. */
  run: string;
  /** `running` while a call is under way (or one stopped before its end), `finished` once the last one returned. */
  state: 'running' | 'finished';
  /** Where its items are: each kind and namespace with its number of items (at most 20). */
  kinds: RunKind[];
  /** When the first call with this id began. */
  startedAt: Date;
  /** How long ago the first call began, ms. */
  ageMs: number;
  /** When the last call returned. */
  finishedAt?: Date;
  /** Calls made with this kickoff id. */
  calls: number;
  /** How the last call to end settled its items (`scheduleMany()`'s result counts). */
  settled?: KickoffSettled;
  /** Its chains by state, now. */
  progress: RowProgress;
  /** Its oldest chain still pending, if one is. */
  oldestPending?: OldestPending<K>;
}

/** A fan-out, as a row. */
export interface FanOutRow<K = Key> {
  /** The fan-out's id (24 hex digits). */
  id: string;
  /** Its children's `lock_run`: pass it as `list({ run })` to list them by state. */
  run: string;
  /** `writing`, `sealed` (waiting for children), `joining` (the join was started) or `cancelled`. */
  state: FanOutState;
  /** The parent entity. */
  parent: EntityRef<K>;
  /** The parent's chain. */
  chain: string;
  /** The parent's step that fanned out (the join is the next one). */
  seq: number;
  /** The children's kinds (known once sealed). */
  kinds: string[];
  /** When the fan-out began. */
  createdAt: Date;
  /** How long ago, ms. */
  ageMs: number;
  /** When every child was added. */
  sealedAt?: Date;
  /** When its join was committed. */
  joinedAt?: Date;
  /** Once joining: the outcome the join was told. */
  outcome?: string;
  /** Once joining: the child counts the join was decided on. */
  atJoin?: ChildCounts;
  /** Its children by state, now (from their locks). */
  progress: RowProgress;
  /** Its oldest child still pending, if one is. */
  oldestPending?: OldestPending<K>;
}

/** A page of rows. */
export interface RowPage<R> {
  /** The rows of this page, newest first. */
  rows: R[];
  /** Pass it back as `cursor` for the next page; undefined when there is no more. */
  cursor?: string;
}

/** What the rows read with. */
export interface RowParts extends KeyWriting {
  reads: StoreReads;
  now: number;
}

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;

/** A page of kickoffs, newest first. */
export async function kickoffRows(parts: RowParts, page: { limit?: number; cursor?: string }): Promise<RowPage<KickoffRow>> {
  const found = await listed(parts.reads, KICKOFF_RUN_KIND, '', page);
  const runs = found.entities.flatMap((e) => { const r = readKickoffRun(e.properties); return r ? [r] : []; });
  return withCursor(await Promise.all(runs.map((r) => kickoffRow(parts, r))), found.cursor);
}

/** The kickoff `kickoffId`, or undefined when it left no record. */
export async function kickoffRowOf(parts: RowParts, kickoffId: string): Promise<KickoffRow | undefined> {
  if (typeof kickoffId !== 'string' || kickoffId === '') throw new RangeError('a kickoff id is a non-empty string');
  const run = readKickoffRun(await parts.reads.get(kickoffRunKey(kickoffRun(kickoffId))));
  return run && kickoffRow(parts, run);
}

/** A page of fan-outs of one namespace, newest first. */
export async function fanOutRows(parts: RowParts, page: { limit?: number; cursor?: string; namespace?: string }): Promise<RowPage<FanOutRow>> {
  const found = await listed(parts.reads, HEADER_KIND, page.namespace ?? '', page);
  const headers = found.entities.flatMap((e) => {
    const h = readHeader(String(e.key.name ?? ''), e.properties, decodeKey);
    return h ? [h] : [];
  });
  return withCursor(await Promise.all(headers.map((h) => fanOutRow(parts, h))), found.cursor);
}

/** The fan-out `id` (in `namespace`, its parent's), or undefined when there is none. */
export async function fanOutRowOf(parts: RowParts, id: string, namespace = ''): Promise<FanOutRow | undefined> {
  if (typeof id !== 'string' || !/^[0-9a-f]{24}$/.test(id)) throw new RangeError('a fan-out id is 24 hex digits');
  const header = readHeader(id, await parts.reads.get(headerKey(id, namespace || undefined)), decodeKey);
  return header && fanOutRow(parts, header);
}

/** The fan-outs of `chain` on `parent` (any step of it, joined ones included), newest first, at most 20. */
export async function fanOutsOfChain(parts: RowParts, parent: Key, chain: string): Promise<FanOutRow[]> {
  if (!parts.reads.findsKeys) return [];
  const keys = await parts.reads.findKeys({ kind: HEADER_KIND, namespace: parent.namespace ?? '', property: 'chain', equals: chain, limit: 20 });
  const found = await parts.reads.getMany(keys);
  const headers = keys.flatMap((k, i) => {
    const h = readHeader(String(k.name ?? ''), found[i], decodeKey);
    return h && keyIdentity(h.parent) === keyIdentity(parent) ? [h] : [];
  });
  headers.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
  return Promise.all(headers.map((h) => fanOutRow(parts, h)));
}

async function kickoffRow(parts: RowParts, r: KickoffRun): Promise<KickoffRow> {
  const { progress, oldestPending } = await progressOf(parts, r.run, r.kinds, r.total);
  const row: KickoffRow = {
    kickoffId: r.kickoffId, run: r.run, state: r.state, kinds: r.kinds, startedAt: r.startedAt,
    ageMs: Math.max(0, parts.now - r.startedAt.getTime()), calls: r.calls, progress,
  };
  if (r.finishedAt) row.finishedAt = r.finishedAt;
  if (r.settled) row.settled = r.settled;
  if (oldestPending) row.oldestPending = oldestPending;
  return row;
}

async function fanOutRow(parts: RowParts, h: Header): Promise<FanOutRow> {
  const namespace = h.parent.namespace ?? '';
  const kinds = h.kinds ?? [];
  const run = fanOutRun(h.id);
  const { progress, oldestPending } = await progressOf(parts, run, kinds.map((kind) => ({ kind, namespace, items: 0 })), h.total);
  const row: FanOutRow = {
    id: h.id, run, state: h.state, parent: { key: h.parent, encodedKey: parts.encode(h.parent), keyPath: parts.show(h.parent) },
    chain: h.chain, seq: h.seq, kinds, createdAt: h.createdAt, ageMs: Math.max(0, parts.now - h.createdAt.getTime()), progress,
  };
  if (h.sealedAt) row.sealedAt = h.sealedAt;
  if (h.joinedAt) row.joinedAt = h.joinedAt;
  if (h.outcome !== undefined) row.outcome = h.outcome;
  if (h.counts) row.atJoin = h.counts;
  if (oldestPending) row.oldestPending = oldestPending;
  return row;
}

/** Four counts and one query per kind and namespace of the run, all at once. */
async function progressOf(
  parts: RowParts, run: string, kinds: readonly RunKind[], total: number,
): Promise<{ progress: RowProgress; oldestPending?: OldestPending }> {
  const { reads } = parts;
  if (!reads.countsLocks || !reads.queriesLocks) throw new ConfigError('kickoff and fan-out rows need a store with countLocks and queryLocks (DatastoreStore and MemoryStore have them).');
  const cap = Math.min(MAX_COUNT_CAP, Math.max(1, total));
  const states = [StepState.scheduled, StepState.complete, StepState.failed, StepState.cancelled] as const;
  const per = await Promise.all(kinds.map(async ({ kind, namespace }) => {
    const [counts, oldest] = await Promise.all([
      Promise.all(states.map((state) => reads.countLocks({ kind, namespace, state, run, cap }))),
      reads.queryLocks({ kind, namespace, state: StepState.scheduled, run, order: 'asc', limit: 1 }),
    ]);
    return { counts, oldest: oldest.entities[0] };
  }));
  const sum = (i: number): LockCount => per.reduce<LockCount>((acc, p) => ({ count: acc.count + p.counts[i]!.count, exact: acc.exact && p.counts[i]!.exact }), { count: 0, exact: true });
  const [pending, complete, failed, cancelled] = [sum(0), sum(1), sum(2), sum(3)];
  const progress: RowProgress = { total, started: pending.count + complete.count + failed.count + cancelled.count, pending, complete, failed, cancelled };
  let oldestPending: OldestPending | undefined;
  for (const { oldest } of per) {
    const since = oldest?.properties.lock_ts;
    if (!oldest || !(since instanceof Date) || (oldestPending && oldestPending.since <= since)) continue;
    oldestPending = { key: oldest.key, encodedKey: parts.encode(oldest.key), keyPath: parts.show(oldest.key), since, ageMs: Math.max(0, parts.now - since.getTime()) };
  }
  return oldestPending ? { progress, oldestPending } : { progress };
}

async function listed(reads: StoreReads, kind: string, namespace: string, page: { limit?: number; cursor?: string }): Promise<{ entities: { key: Key; properties: Record<string, unknown> }[]; cursor?: string }> {
  if (!reads.listsRecords) throw new ConfigError('kickoff and fan-out rows need a store with listRecords (DatastoreStore and MemoryStore have it).');
  const limit = page.limit ?? DEFAULT_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new RangeError(`limit must be 1 to ${MAX_LIMIT}`);
  if (page.cursor !== undefined && (typeof page.cursor !== 'string' || page.cursor === '')) throw new RangeError('cursor must be one a page handed out');
  return reads.listRecords({ kind, namespace, newestBy: kind === HEADER_KIND ? 'createdAt' : 'startedAt', limit, ...(page.cursor !== undefined && { cursor: page.cursor }) });
}

function withCursor<R>(rows: R[], cursor: string | undefined): RowPage<R> {
  return cursor ? { rows, cursor } : { rows };
}
