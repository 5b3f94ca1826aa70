/**
 * The outbox's two queries, on the generated client's `runQuery`: the records created before a
 * time (one indexed query per namespace), and every namespace (the `__namespace__` metadata
 * query). Each reads batch after batch until it has what it asked for.
 */
import { Datastore } from '@google-cloud/datastore';
import type { OutboxRecord } from '../types';
import { timestamp } from './datastore-encode';
import { outboxRecord } from './datastore-outbox';
import { decodeEntity, keyFromProto, type RawEntity } from './datastore-protos';
import type { DatastoreRpc, RawQuery } from './datastore-rpc';

/** At most this many batches per query, so a server that keeps saying "more" cannot loop forever. */
const MAX_BATCHES = 1000;

/** Outbox records of kind `kind` in `namespace` created before `before`, oldest first, at most `limit`. */
export async function queryOutbox(rpc: DatastoreRpc, kind: string, namespace: string, before: Date, limit: number): Promise<OutboxRecord[]> {
  const query: RawQuery = {
    kind: [{ name: kind }],
    filter: { propertyFilter: { property: { name: 'createdAt' }, op: 'LESS_THAN', value: { timestampValue: timestamp(before.getTime()) } } },
    order: [{ property: { name: 'createdAt' }, direction: 'ASCENDING' }],
  };
  const entities = await runAll(rpc, namespace, query, limit);
  return entities.map((entity) => outboxRecord({ ...decodeEntity(entity).properties, [Datastore.KEY]: keyFromProto(entity.key ?? {}) }));
}

/** Every namespace of the database ("" for the default one). */
export async function allNamespaces(rpc: DatastoreRpc): Promise<string[]> {
  const query: RawQuery = { kind: [{ name: '__namespace__' }], projection: [{ property: { name: '__key__' } }] };
  const entities = await runAll(rpc, '', query, Number.POSITIVE_INFINITY);
  const names = entities.map((entity) => entity.key?.path?.[0]?.name ?? '');
  return [...new Set(['', ...names])];
}

/** The entities `query` finds in `namespace`, at most `limit`, over as many batches as it takes. */
async function runAll(rpc: DatastoreRpc, namespace: string, query: RawQuery, limit: number): Promise<RawEntity[]> {
  const entities: RawEntity[] = [];
  let cursor: Uint8Array | undefined;
  for (let batch = 0; batch < MAX_BATCHES && entities.length < limit; batch++) {
    const remaining = limit - entities.length;
    const page = await rpc.runQuery(namespace, {
      ...query,
      ...(Number.isFinite(remaining) && { limit: { value: remaining } }),
      ...(cursor && { startCursor: cursor }),
    });
    for (const result of page.entityResults ?? []) if (result.entity) entities.push(result.entity);
    if (page.moreResults !== 'NOT_FINISHED' || !page.endCursor || page.endCursor.length === 0) break;
    cursor = page.endCursor;
  }
  return entities.slice(0, limit);
}
