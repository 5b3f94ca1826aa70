/**
 * The one query the operator's view needs from a store: lockable entities of one kind and
 * namespace in one step state, ordered by `lock_ts`, a page at a time. It is served by an index
 * on (`lock_state`, `lock_ts`) and never reads a whole kind.
 */
import type { LockQuery } from '../types';

export type { FoundEntity, LockPage, LockQuery } from '../types';

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
}
