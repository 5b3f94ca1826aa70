/**
 * `queryLocks` on Datastore: one query on the kind with `lock_state = ?`, an optional range on
 * `lock_ts` and an order on `lock_ts`, served by a composite index on (`lock_state`, `lock_ts`)
 * (one ascending, one descending), or on (`lock_run`, `lock_state`, `lock_ts`) when it keeps to
 * one run. A missing index is a configuration error that says which.
 */
import { StoreConfigError } from '../../errors/errors';
import { timestamp } from './encode';
import { grpcCode } from './errors';
import { decodeEntityProperties, keyFromProto } from './protos';
import type { DatastoreRpc, QueryBatch, RawFilter, RawQuery } from './rpc';
import { checkLockQuery, type LockPage, type LockQuery } from '../lock-query';

/** gRPC FAILED_PRECONDITION: what Datastore answers a query that has no index. */
const FAILED_PRECONDITION = 9;

/** Runs one page of `query`. */
export async function queryDatastoreLocks(rpc: DatastoreRpc, query: LockQuery): Promise<LockPage> {
  checkLockQuery(query);
  const raw: RawQuery = {
    kind: [{ name: query.kind }],
    filter: lockFilter(query),
    order: [{ property: { name: 'lock_ts' }, direction: query.order === 'desc' ? 'DESCENDING' : 'ASCENDING' }],
    limit: { value: query.limit },
    ...(query.cursor && { startCursor: Buffer.from(query.cursor, 'base64') }),
  };
  let batch;
  try {
    batch = await rpc.runQuery(query.namespace ?? '', raw);
  } catch (error) {
    if (isMissingIndex(error)) throw missingIndex(query, error);
    throw error;
  }
  return pageOf(batch, query.limit);
}

/** A batch of entities as a page: its entities, and a cursor when a full batch may have more behind it. */
export function pageOf(batch: QueryBatch, limit: number): LockPage {
  const entities = (batch.entityResults ?? []).flatMap((result) =>
    result.entity ? [{ key: keyFromProto(result.entity.key ?? {}), properties: decodeEntityProperties(result.entity) }] : [],
  );
  const page: LockPage = { entities };
  const cursor = batch.endCursor;
  if (batch.moreResults !== 'NO_MORE_RESULTS' && cursor && cursor.length > 0 && entities.length === limit) {
    page.cursor = Buffer.from(cursor).toString('base64');
  }
  return page;
}

/** The filter of a lock query or count: `lock_state`, a range on `lock_ts`, and `lock_run`. */
export function lockFilter(query: Pick<LockQuery, 'state' | 'tsFrom' | 'tsBefore' | 'run'>): RawFilter {
  const filters: RawFilter[] = [{ propertyFilter: { property: { name: 'lock_state' }, op: 'EQUAL', value: { stringValue: query.state } } }];
  if (query.run !== undefined) filters.push({ propertyFilter: { property: { name: 'lock_run' }, op: 'EQUAL', value: { stringValue: query.run } } });
  if (query.tsFrom) filters.push(tsFilter('GREATER_THAN_OR_EQUAL', query.tsFrom));
  if (query.tsBefore) filters.push(tsFilter('LESS_THAN', query.tsBefore));
  return { compositeFilter: { op: 'AND', filters } };
}

function tsFilter(op: 'GREATER_THAN_OR_EQUAL' | 'LESS_THAN', at: Date): RawFilter {
  return { propertyFilter: { property: { name: 'lock_ts' }, op, value: { timestampValue: timestamp(at.getTime()) } } };
}

/** A query's missing index as a configuration error that names the index and how to add it. */
export function missingIndex(query: Pick<LockQuery, 'kind' | 'run'> & { order?: LockQuery['order'] }, error: StoreConfigError): StoreConfigError {
  const direction = query.order === 'desc' ? 'lock_ts descending' : 'lock_ts ascending';
  const properties = query.run === undefined ? `lock_state, ${direction}` : `lock_run, lock_state, ${direction}`;
  return new StoreConfigError(
    `Datastore has no index for the lock query on kind ${query.kind} (${properties}): ` +
      `add its entries to index.yaml (\`npx datastore-locker-indexes ${query.kind}\` prints them) and run \`gcloud datastore indexes create index.yaml\``,
    { cause: error.cause },
  );
}

/** Whether `error` is Datastore's answer to a query without its index. */
export function isMissingIndex(error: unknown): error is StoreConfigError {
  return error instanceof StoreConfigError && grpcCode(error.cause) === FAILED_PRECONDITION;
}
