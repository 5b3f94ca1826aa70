/**
 * `findKeys` on Datastore: one keys-only query (a projection on `__key__`) with one filter on one
 * property, served by the property's built-in index. One batch: it may hold fewer keys than match.
 */
import type { Key } from '@google-cloud/datastore';
import { timestamp } from './encode';
import { keyFromProto } from './protos';
import type { DatastoreRpc, RawFilter } from './rpc';
import { checkKeyQuery, type KeyQuery } from '../key-query';

/** Runs `query`: the keys of one batch of results. */
export async function findDatastoreKeys(rpc: DatastoreRpc, query: KeyQuery): Promise<Key[]> {
  checkKeyQuery(query);
  const property = { name: query.property };
  const filter: RawFilter = query.equals !== undefined
    ? { propertyFilter: { property, op: 'EQUAL', value: { stringValue: query.equals } } }
    // <= a time, for times in whole milliseconds (as the library writes them)
    : { propertyFilter: { property, op: 'LESS_THAN', value: { timestampValue: timestamp(query.atOrBefore!.getTime() + 1) } } };
  const batch = await rpc.runQuery(query.namespace ?? '', {
    kind: [{ name: query.kind }],
    projection: [{ property: { name: '__key__' } }],
    filter,
    limit: { value: query.limit },
  });
  return (batch.entityResults ?? []).flatMap((result) => (result.entity?.key ? [keyFromProto(result.entity.key)] : []));
}
