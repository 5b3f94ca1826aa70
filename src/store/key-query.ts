/**
 * `Store.findKeys`: a keys-only query on one property of one kind, its checks shared by the stores,
 * and the in-memory store's answer (a scan that stops at the limit).
 */
import type { Key } from '@google-cloud/datastore';
import type { KeyQuery, Properties } from '../types';
import { copyKey } from '../keys/keys';
import { MAX_QUERY_LIMIT } from './lock-query';

export type { KeyQuery } from '../types';

/** Throws a `RangeError` saying what is wrong with a key query. */
export function checkKeyQuery(query: KeyQuery): void {
  if (typeof query.kind !== 'string' || query.kind === '' || query.kind.startsWith('__')) {
    throw new RangeError(`a key query needs a kind (not a "__" metadata kind); got ${JSON.stringify(query.kind)}`);
  }
  if (typeof query.property !== 'string' || query.property === '') throw new RangeError('a key query needs a property');
  if ((query.equals === undefined) === (query.atOrBefore === undefined)) throw new RangeError('a key query takes either equals or atOrBefore');
  if (query.atOrBefore !== undefined && !(query.atOrBefore instanceof Date)) throw new RangeError('atOrBefore must be a Date');
  if (!Number.isSafeInteger(query.limit) || query.limit < 1 || query.limit > MAX_QUERY_LIMIT) {
    throw new RangeError(`a key query's limit must be 1 to ${MAX_QUERY_LIMIT}; got ${String(query.limit)}`);
  }
}

/** An entity as the memory store holds it (undefined properties: deleted). */
interface Held {
  key: Key;
  properties: Properties | undefined;
}

/** The in-memory answer: the matching keys met first, at most `limit`. */
export function findMemoryKeys(entities: Iterable<Held>, query: KeyQuery): Key[] {
  checkKeyQuery(query);
  const found: Key[] = [];
  for (const { key, properties } of entities) {
    if (!properties || key.kind !== query.kind || (query.namespace !== undefined && (key.namespace ?? '') !== query.namespace)) continue;
    const value = properties[query.property];
    const match = query.equals !== undefined
      ? value === query.equals
      : value instanceof Date && value.getTime() <= query.atOrBefore!.getTime();
    if (!match) continue;
    found.push(copyKey(key));
    if (found.length >= query.limit) break;
  }
  return found;
}
