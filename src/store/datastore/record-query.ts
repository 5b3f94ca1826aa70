/**
 * `listRecords` on Datastore: one query on the kind ordered by one property, descending, served by
 * the property's built-in index (no composite index).
 */
import { pageOf } from './query';
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
  return pageOf(batch, query.limit);
}
