/**
 * The one query the operator's view needs from a store: lockable entities of one kind and
 * namespace in one step state, ordered by `lock_ts`, a page at a time. It is served by an index
 * on (`lock_state`, `lock_ts`) and never reads a whole kind.
 */
import type { LockCountQuery, LockQuery } from '../types';

export type { FoundEntity, LockCount, LockCountQuery, LockPage, LockQuery } from '../types';

/** The largest count a store is asked for. */
export const MAX_COUNT_CAP = 100_000;

/** Throws a `RangeError` saying what is wrong with a count. */
export function checkLockCount(query: LockCountQuery): void {
  checkLockQuery({ ...query, order: 'asc', limit: 1 });
  if (!Number.isSafeInteger(query.cap) || query.cap < 1 || query.cap > MAX_COUNT_CAP) {
    throw new RangeError(`a lock count's cap must be 1 to ${MAX_COUNT_CAP.toLocaleString('en-US')}; got ${String(query.cap)}`);
  }
}

/** The largest page a store is asked for. */
export const MAX_QUERY_LIMIT = 1_000;

/** Throws a `RangeError` saying what is wrong with a query. */
export function checkLockQuery(query: LockQuery): void {
  if (typeof query.kind !== 'string' || query.kind === '' || query.kind.startsWith('__')) {
    throw new RangeError(`a lock query needs a kind (not a "__" metadata kind); got ${JSON.stringify(query.kind)}`);
  }
  if (!Number.isSafeInteger(query.limit) || query.limit < 1 || query.limit > MAX_QUERY_LIMIT) {
    throw new RangeError(`a lock query's limit must be 1 to ${MAX_QUERY_LIMIT}; got ${String(query.limit)}`);
  }
  if (query.order !== 'asc' && query.order !== 'desc') throw new RangeError(`order must be "asc" or "desc"; got ${String(query.order)}`);
  if (query.run !== undefined && (typeof query.run !== 'string' || query.run === '' || query.run.length > 500)) throw new RangeError('a lock query\'s run is a non-empty string of at most 500 characters');
}
