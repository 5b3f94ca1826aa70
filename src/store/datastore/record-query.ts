/**
 * `listRecords` on Datastore: one query on the kind ordered by one property, descending, served by
 * the property's built-in index (no composite index).
 */
import { decodeEntityProperties, keyFromProto } from './protos';
import type { DatastoreRpc } from './rpc';
import { checkRecordQuery, type RecordQuery } from '../record-query';
import type { LockPage } from '../../types';

/** Runs one page of `query`. */
export async function listDatastoreRecords(rpc: DatastoreRpc, query: RecordQuery): Promise<LockPage> {
  checkRecordQuery(query);
  const batch = await rpc.runQuery(query.namespace ?? '', {
    kind: [{ name: query.kind }],
    order: [{ property: { name: query.newestBy }, direction: 'DESCENDING' }],
    limit: { value: query.limit },
    ...(query.cursor && { startCursor: Buffer.from(query.cursor, 'base64') }),
  });
  const entities = (batch.entityResults ?? []).flatMap((result) =>
    result.entity ? [{ key: keyFromProto(result.entity.key ?? {}), properties: decodeEntityProperties(result.entity) }] : [],
  );
  const page: LockPage = { entities };
  const cursor = batch.endCursor;
  if (batch.moreResults !== 'NO_MORE_RESULTS' && cursor && cursor.length > 0 && entities.length === query.limit) {
    page.cursor = Buffer.from(cursor).toString('base64');
  }
  return page;
}
