/**
 * `queryLocks` for the in-memory store: the same answers as Datastore's indexed query on
 * (`lock_state`, `lock_ts`), with a cursor that names the last entity returned.
 */
import type { Key } from '@google-cloud/datastore';
import type { Properties } from '../../types';
import { checkLockQuery, type LockPage, type LockQuery } from '../lock-query';
import { copyKey, keyString } from '../../keys/keys';
import { copyProperties } from '../values';

/** An entity as the memory store holds it. */
export interface MemoryEntity {
  key: Key;
  properties: Properties | undefined;
}

type Position = [ts: number, id: string];

/** Runs `query` over the stored entities. Entities without `lock_state` or `lock_ts` are not in the index, as in Datastore. */
export function queryMemory(entities: Iterable<MemoryEntity>, query: LockQuery): LockPage {
  checkLockQuery(query);
  const sign = query.order === 'asc' ? 1 : -1;
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  const matches: Array<{ entity: MemoryEntity; at: Position }> = [];
  for (const entity of entities) {
    const at = position(entity, query);
    if (at && (!after || sign * compare(at, after) > 0)) matches.push({ entity, at });
  }
  matches.sort((a, b) => sign * compare(a.at, b.at));
  const page = matches.slice(0, query.limit);
  const out: LockPage = {
    entities: page.map(({ entity }) => ({ key: copyKey(entity.key), properties: copyProperties(entity.properties!, { unwrapNumbers: true }) })),
  };
  if (matches.length > query.limit) out.cursor = encodeCursor(page[page.length - 1]!.at);
  return out;
}

/** Where an entity sorts, or undefined when the query does not match it. */
function position(entity: MemoryEntity, query: LockQuery): Position | undefined {
  const props = entity.properties;
  if (!props || entity.key.kind !== query.kind || (entity.key.namespace ?? '') !== (query.namespace ?? '')) return undefined;
  if (props.lock_state !== query.state || !(props.lock_ts instanceof Date)) return undefined;
  const ts = props.lock_ts.getTime();
  if (query.tsBefore && ts >= query.tsBefore.getTime()) return undefined;
  if (query.tsFrom && ts < query.tsFrom.getTime()) return undefined;
  return [ts, keyString(entity.key)];
}

function compare(a: Position, b: Position): number {
  return a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
}

function encodeCursor(at: Position): string {
  return Buffer.from(JSON.stringify(at)).toString('base64url');
}

function decodeCursor(cursor: string): Position {
  try {
    const at: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString());
    if (Array.isArray(at) && typeof at[0] === 'number' && typeof at[1] === 'string') return [at[0], at[1]];
  } catch {
    // fall through
  }
  throw new RangeError('the cursor is not one this store handed out');
}
