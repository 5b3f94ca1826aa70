/**
 * `queryLocks` on Datastore: one query on the kind with `lock_state = ?`, an optional range on
 * `lock_ts` and an order on `lock_ts`, served by a composite index on (`lock_state`, `lock_ts`)
 * (one ascending, one descending). A missing index is a configuration error that says which.
 */
import { Datastore, PropertyFilter, type Key } from '@google-cloud/datastore';
import type { CallOptions } from 'google-gax';
import { StoreConfigError } from '../errors';
import type { Properties } from '../types';
import { call, grpcCode } from './datastore-errors';
import { checkLockQuery, type FoundEntity, type LockPage, type LockQuery } from './lock-query';

/** gRPC FAILED_PRECONDITION: what Datastore answers a query that has no index. */
const FAILED_PRECONDITION = 9;

/** Runs one page of `query`. */
export async function queryDatastoreLocks(datastore: Datastore, gaxOptions: CallOptions, query: LockQuery): Promise<LockPage> {
  checkLockQuery(query);
  let q = datastore
    .createQuery(query.namespace ?? '', query.kind)
    .filter(new PropertyFilter('lock_state', '=', query.state));
  if (query.tsFrom) q = q.filter(new PropertyFilter('lock_ts', '>=', query.tsFrom));
  if (query.tsBefore) q = q.filter(new PropertyFilter('lock_ts', '<', query.tsBefore));
  q = q.order('lock_ts', { descending: query.order === 'desc' }).limit(query.limit);
  if (query.cursor) q = q.start(query.cursor);
  const [entities, info] = await call('lock query', async () => {
    try {
      return await datastore.runQuery(q, { gaxOptions });
    } catch (error) {
      if (grpcCode(error) === FAILED_PRECONDITION) throw missingIndex(query, error);
      throw error;
    }
  });
  const page: LockPage = { entities: entities.map(found) };
  if (info.moreResults !== 'NO_MORE_RESULTS' && info.endCursor && entities.length === query.limit) page.cursor = info.endCursor;
  return page;
}

function found(entity: Record<string | symbol, unknown>): FoundEntity {
  const key = entity[Datastore.KEY] as Key;
  const properties: Properties = {};
  for (const [name, value] of Object.entries(entity)) properties[name] = value;
  return { key, properties };
}

function missingIndex(query: LockQuery, error: unknown): StoreConfigError {
  const direction = query.order === 'desc' ? 'lock_ts descending' : 'lock_ts ascending';
  return new StoreConfigError(
    `Datastore has no index for the lock query on kind ${query.kind} (lock_state, ${direction}): ` +
      'add the kind to index.yaml as the README shows and run `gcloud datastore indexes create index.yaml`',
    { cause: error },
  );
}
