/**
 * `Store.listRecords`: records of one kind, newest first by one time property, a page at a time
 * (the operator's lists of kickoff runs and fan-outs); its checks, shared by the stores, and the
 * in-memory store's answer. These kinds hold one record per kickoff call or fan-out, not one per
 * chain: the in-memory store sorts the kind's records (it keeps no index of them).
 */
import type { Key } from '@google-cloud/datastore';
import type { LockPage, Properties, RecordQuery } from '../types';
import { copyKey, keyString } from '../keys/keys';
import { MAX_QUERY_LIMIT } from './lock-query';

export type { RecordQuery } from '../types';

/** Throws a `RangeError` saying what is wrong with a record query. */
export function checkRecordQuery(query: RecordQuery): void {
  if (typeof query.kind !== 'string' || query.kind === '' || query.kind.startsWith('__')) {
    throw new RangeError(`a record query needs a kind (not a "__" metadata kind); got ${JSON.stringify(query.kind)}`);
  }
  if (typeof query.newestBy !== 'string' || query.newestBy === '') throw new RangeError('a record query needs the property it orders by');
  if (!Number.isSafeInteger(query.limit) || query.limit < 1 || query.limit > MAX_QUERY_LIMIT) {
    throw new RangeError(`a record query's limit must be 1 to ${MAX_QUERY_LIMIT}; got ${String(query.limit)}`);
  }
}

/** An entity as the memory store holds it (undefined properties: deleted). */
interface Held {
  key: Key;
  properties: Properties | undefined;
}

/** The in-memory answer: the kind's records with the property, newest first (ties in key order), after the cursor's. */
export function listMemoryRecords(entities: Iterable<Held>, query: RecordQuery, copy: (p: Properties) => Properties): LockPage {
  checkRecordQuery(query);
  const namespace = query.namespace ?? '';
  const rows: { at: number; id: string; held: Held & { properties: Properties } }[] = [];
  for (const held of entities) {
    const at = held.properties?.[query.newestBy];
    if (!held.properties || held.key.kind !== query.kind || (held.key.namespace ?? '') !== namespace || !(at instanceof Date)) continue;
    rows.push({ at: at.getTime(), id: keyString(held.key), held: held as Held & { properties: Properties } });
  }
  rows.sort((a, b) => b.at - a.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const after = query.cursor === undefined ? undefined : readCursor(query.cursor);
  const start = after === undefined ? 0 : rows.findIndex((r) => r.at < after.at || (r.at === after.at && r.id > after.id));
  const page = start < 0 ? [] : rows.slice(start, start + query.limit);
  const out: LockPage = { entities: page.map((r) => ({ key: copyKey(r.held.key), properties: copy(r.held.properties) })) };
  const last = page.at(-1);
  if (last && start + page.length < rows.length) out.cursor = Buffer.from(JSON.stringify([last.at, last.id])).toString('base64url');
  return out;
}

function readCursor(cursor: string): { at: number; id: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString());
    if (Array.isArray(value) && typeof value[0] === 'number' && typeof value[1] === 'string') return { at: value[0], id: value[1] };
  } catch {
    // fall through
  }
  throw new RangeError('the cursor is not one this store handed out');
}
