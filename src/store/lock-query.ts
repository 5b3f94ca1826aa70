/**
 * The one query the operator's view needs from a store: lockable entities of one kind and
 * namespace in one step state, ordered by `lock_ts`, a page at a time. It is served by an index
 * on (`lock_state`, `lock_ts`) and never reads a whole kind.
 */
import type { Key } from '@google-cloud/datastore';
import type { Properties, StepState } from '../types';

/** Which entities to list: an equality on `lock_state` and a range and order on `lock_ts`. */
export interface LockQuery {
  /** The entities' kind. */
  kind: string;
  /** Their namespace; `''` or undefined is the default one. */
  namespace?: string;
  /** `lock_state` equals this. */
  state: StepState;
  /** By `lock_ts`: `asc` is oldest first, `desc` newest first (ties in key order). */
  order: 'asc' | 'desc';
  /** Only entities whose `lock_ts` is before this instant. */
  tsBefore?: Date;
  /** Only entities whose `lock_ts` is at or after this instant. */
  tsFrom?: Date;
  /** At most this many entities (1 to 1 000). */
  limit: number;
  /** Where the previous page of the same query ended (its `cursor`). */
  cursor?: string;
}

/** An entity a query found. */
export interface FoundEntity {
  /** The entity's key. */
  key: Key;
  /** Its stored properties, lock fields included. */
  properties: Properties;
}

/** One page of a `LockQuery`. */
export interface LockPage {
  /** The entities found, in the query's order. */
  entities: FoundEntity[];
  /** Pass it as the next query's `cursor` to go on; undefined when there is nothing more. */
  cursor?: string;
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
}
