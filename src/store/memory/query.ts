/**
 * `queryLocks` and `countLocks` for the in-memory store: the same answers as Datastore's indexed
 * query on (`lock_state`, `lock_ts`), read from the store's lock index (`lock-index.ts`), with a
 * cursor that names the last entity returned.
 */
import type { Key } from '@google-cloud/datastore';
import type { Properties } from '../../types';
import { checkLockCount, checkLockQuery, type LockCount, type LockCountQuery, type LockPage, type LockQuery } from '../lock-query';
import { copyKey } from '../../keys/keys';
import { copyProperties } from '../values';
import { compareEntries, lowerBound, type IndexEntry, type IndexRange, type LockIndex } from './lock-index';

/** An entity as the memory store holds it. */
export interface MemoryEntity {
  key: Key;
  properties: Properties | undefined;
}

/** Runs `query` over the index; `entity` finds a stored entity by its id. */
export function queryMemory(index: LockIndex, entity: (id: string) => MemoryEntity | undefined, query: LockQuery): LockPage {
  checkLockQuery(query);
  const { list, lo, hi } = index.span(rangeOf(query));
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  const picked: IndexEntry[] = [];
  if (query.order === 'asc') {
    let at = after ? lowerBound(list, after, lo, hi) : lo;
    if (after && at < hi && compareEntries(list[at]!, after) === 0) at += 1;
    for (; at < hi && picked.length <= query.limit; at++) picked.push(list[at]!);
  } else {
    for (let at = (after ? lowerBound(list, after, lo, hi) : hi) - 1; at >= lo && picked.length <= query.limit; at--) picked.push(list[at]!);
  }
  const page = picked.slice(0, query.limit);
  const out: LockPage = {
    entities: page.flatMap((e) => {
      const found = entity(e.id);
      return found?.properties ? [{ key: copyKey(found.key), properties: copyProperties(found.properties, { unwrapNumbers: true }) }] : [];
    }),
  };
  if (picked.length > query.limit) out.cursor = encodeCursor(page[page.length - 1]!);
  return out;
}

/** Counts what `query` matches, up to its cap, from the index: two binary searches. */
export function countMemory(index: LockIndex, query: LockCountQuery): LockCount {
  checkLockCount(query);
  const n = index.count(rangeOf(query));
  return n > query.cap ? { count: query.cap, exact: false } : { count: n, exact: true };
}

function rangeOf(query: LockQuery | LockCountQuery): IndexRange {
  return {
    kind: query.kind, namespace: query.namespace ?? '', state: query.state, run: query.run,
    from: query.tsFrom?.getTime(), before: query.tsBefore?.getTime(),
  };
}

function encodeCursor(at: IndexEntry): string {
  return Buffer.from(JSON.stringify([at.ts, at.id])).toString('base64url');
}

function decodeCursor(cursor: string): IndexEntry {
  try {
    const at: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString());
    if (Array.isArray(at) && typeof at[0] === 'number' && typeof at[1] === 'string') return { ts: at[0], id: at[1] };
  } catch {
    // fall through
  }
  throw new RangeError('the cursor is not one this store handed out');
}
