/**
 * `countLocks` on Datastore: a count aggregation (`RunAggregationQuery` with `COUNT` up to the cap,
 * one RPC, served by the same index as the list), or, where the backend has none (it answers
 * UNIMPLEMENTED or INVALID_ARGUMENT to the aggregation), a keys-only query paged up to the cap or
 * {@link KEYS_CAP}, whichever is lower. Which
 * one a backend takes is found on the first count and kept.
 */
import { grpcCode } from './errors';
import { isMissingIndex, lockFilter, missingIndex } from './query';
import type { DatastoreRpc, RawQuery } from './rpc';
import { checkLockCount, type LockCount, type LockCountQuery } from '../lock-query';

/** gRPC codes a backend without count aggregation answers it with. */
const NO_AGGREGATION: readonly number[] = Object.freeze([3 /* INVALID_ARGUMENT */, 12 /* UNIMPLEMENTED */]);
/** Keys per page of the keys-only count. */
const PAGE = 1_000;
/**
 * The most a keys-only count reads: past it the count says "1,000+". A backend without count
 * aggregation (the legacy emulator) answers 300 keys a batch, so a count costs at most 4 queries.
 */
export const KEYS_CAP = 1_000;

/** How a store counts: found on its first count. */
export type CountMethod = 'aggregation' | 'keys';

/** Counts locks (see the file's comment); `method` is what the backend was found to take, and is updated. */
export async function countDatastoreLocks(rpc: DatastoreRpc, query: LockCountQuery, method: { current: CountMethod | undefined }): Promise<LockCount> {
  checkLockCount(query);
  try {
    return await count(rpc, query, method);
  } catch (error) {
    // A range on lock_ts after equalities needs a composite index; equalities alone need none.
    if (isMissingIndex(error)) throw missingIndex(query, error);
    throw error;
  }
}

async function count(rpc: DatastoreRpc, query: LockCountQuery, method: { current: CountMethod | undefined }): Promise<LockCount> {
  const raw: RawQuery = { kind: [{ name: query.kind }], filter: lockFilter(query) };
  const namespace = query.namespace ?? '';
  if (method.current !== 'keys') {
    try {
      const n = await rpc.runCount(namespace, raw, query.cap + 1);
      method.current = 'aggregation';
      return n > query.cap ? { count: query.cap, exact: false } : { count: n, exact: true };
    } catch (error) {
      const code = error instanceof Error ? grpcCode(error.cause ?? error) : undefined;
      if (method.current === 'aggregation' || code === undefined || !NO_AGGREGATION.includes(code)) throw error;
      method.current = 'keys';
    }
  }
  return countByKeys(rpc, namespace, raw, Math.min(query.cap, KEYS_CAP));
}

async function countByKeys(rpc: DatastoreRpc, namespace: string, raw: RawQuery, cap: number): Promise<LockCount> {
  let n = 0;
  let cursor: Uint8Array | undefined;
  for (;;) {
    const limit = Math.min(PAGE, cap + 1 - n);
    const batch = await rpc.runQuery(namespace, { ...raw, projection: [{ property: { name: '__key__' } }], limit: { value: limit }, ...(cursor ? { startCursor: cursor } : {}) });
    const got = batch.entityResults?.length ?? 0;
    n += got;
    if (n > cap) return { count: cap, exact: false };
    // A batch may hold fewer than asked (NOT_FINISHED): only NO_MORE_RESULTS, or a batch that
    // stopped at the limit with nothing after it, ends the count.
    if (batch.moreResults === 'NO_MORE_RESULTS' || got === 0 || !batch.endCursor || batch.endCursor.length === 0) return { count: n, exact: true };
    cursor = batch.endCursor;
  }
}
