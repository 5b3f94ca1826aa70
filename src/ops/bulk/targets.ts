/**
 * Finding a bulk operation's targets: the count shown before it is confirmed, and one page of
 * them at a time while it runs. A kind's filter is one indexed query range (`filter.ts`), paged
 * by the store's cursor; a fan-out's is its failed children, which `retryFanOutChildren()` reads
 * and retries itself, in one page.
 */
import type { Key } from '@google-cloud/datastore';
import { readLock } from '../../rules/lock-fields';
import type { StoreReads } from '../../store/reads';
import type { LockQuery } from '../../store/lock-query';
import { allChildren, getHeader } from '../../fanout/read-children';
import { countStates, type Header } from '../../fanout/records';
import { targetRange, type BulkAction, type BulkFilter } from './filter';
import type { Target } from './target';

/** Targets per page: one query, and as many actions (each a transaction and a task), within one step. */
export const PAGE_SIZE = 100;
/** The most targets a count counts before it answers "at least". */
export const COUNT_CAP = 10_000;

/** How many targets a filter matches now: `exact` false when there are at least `count`. */
export interface TargetCount {
  count: number;
  exact: boolean;
}

/** The store reads a bulk operation makes. */
export interface TargetReads {
  readonly reads: StoreReads;
}

/** The fan-out a filter names; undefined when it does not exist. */
export function fanOutOf(parts: TargetReads, filter: BulkFilter): Promise<Header | undefined> {
  return getHeader(parts, filter.fanOut!, filter.namespace);
}

/** Counts the targets of `filter` at `now` (a fan-out's failed children, or the kind's query range). */
export async function countTargets(parts: TargetReads, action: BulkAction, filter: BulkFilter, now: Date, stallAfter: number): Promise<TargetCount> {
  if (filter.fanOut !== undefined) {
    const header = await fanOutOf(parts, filter);
    return { count: header ? countStates(await allChildren(parts, header)).failed : 0, exact: true };
  }
  return countRange(parts.reads, { ...targetRange(action, filter, now, stallAfter), order: 'asc', limit: 1 }, COUNT_CAP);
}

/** The entities of a query range, counted up to `cap`: the store's count where it has one (`countLocks`), else a walk of its pages. */
async function countRange(reads: StoreReads, query: LockQuery, cap: number): Promise<TargetCount> {
  if (reads.countsLocks) {
    const { cursor: _cursor, order: _order, limit: _limit, ...range } = query;
    return reads.countLocks({ ...range, cap });
  }
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await reads.queryLocks({ ...query, limit: Math.min(1_000, cap - count), ...(cursor ? { cursor } : {}) });
    count += page.entities.length;
    cursor = page.cursor;
  } while (cursor !== undefined && count < cap);
  return { count, exact: cursor === undefined };
}

/** One page of a kind's targets from `cursor` (undefined: the first page); `cursor` in the answer is where the next starts. */
export async function targetPage(parts: TargetReads, action: BulkAction, filter: BulkFilter, createdAt: Date, stallAfter: number, cursor: string | undefined): Promise<{ targets: Target[]; cursor?: string }> {
  const query: LockQuery = { ...targetRange(action, filter, createdAt, stallAfter), order: 'asc', limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) };
  const page = await parts.reads.queryLocks(query);
  const targets = page.entities.map(({ key, properties }) => targetOf(key, properties));
  return page.cursor === undefined || targets.length === 0 ? { targets } : { targets, cursor: page.cursor };
}

function targetOf(key: Key, properties: Record<string, unknown>): Target {
  const lock = readLock(properties);
  return { key, seq: lock.seq, chain: lock.chain, ts: lock.ts };
}
