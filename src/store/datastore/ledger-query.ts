/**
 * The ledger's two queries, on the generated client's `runQuery`: the records due at a time (one
 * indexed query per namespace, on the built-in index of `due`), and every namespace (the
 * `__namespace__` metadata query). Each reads batch after batch until it has what it asked for.
 */
import type { DueLedger } from '../../types';
import { timestamp } from './encode';
import { decodeEntityProperties, type RawEntity } from './protos';
import { readLedger } from '../ledger-entity';
import type { DatastoreRpc, RawQuery } from './rpc';

/** At most this many batches per query, so a server that keeps saying "more" cannot loop forever. */
const MAX_BATCHES = 1000;

/** The most malformed records one query reads past before it stops looking for well-formed ones. */
const MAX_MALFORMED = 10_000;

/**
 * Ledger records of kind `kind` in `namespace` due at `now` (`due <= now`), oldest due first, at
 * most `limit`; records that are not ledger records are reported as malformed, with why, and do
 * not count toward `limit`: the query reads on past them (up to {@link MAX_MALFORMED}), so records
 * nobody can read never hide the well-formed ones due after them from the sweep.
 */
export async function queryDue(rpc: DatastoreRpc, kind: string, namespace: string, now: Date, limit: number): Promise<DueLedger> {
  const query: RawQuery = {
    kind: [{ name: kind }],
    // due <= now, for times in whole milliseconds (as the library writes them)
    filter: { propertyFilter: { property: { name: 'due' }, op: 'LESS_THAN', value: { timestampValue: timestamp(now.getTime() + 1) } } },
    order: [{ property: { name: 'due' }, direction: 'ASCENDING' }],
  };
  const found: DueLedger = { records: [], malformed: [] };
  let cursor: Uint8Array | undefined;
  for (let batch = 0; batch < MAX_BATCHES && found.records.length < limit && found.malformed.length < MAX_MALFORMED; batch++) {
    const asked = limit - found.records.length;
    const page = await rpc.runQuery(namespace, { ...query, limit: { value: asked }, ...(cursor && { startCursor: cursor }) });
    const results = page.entityResults ?? [];
    for (const result of results) {
      const entity = result.entity;
      if (!entity) continue;
      const path = entity.key?.path ?? [];
      const id = path.length === 1 ? path[0]?.name ?? undefined : undefined;
      const record = id ? readLedger(id, decodeEntityProperties(entity)) : { malformed: 'its key is not a named top-level key' };
      if ('malformed' in record) found.malformed.push(`${namespace}:${id ?? '?'}: ${record.malformed}`);
      else if (found.records.length < limit) found.records.push(record);
    }
    // A page that stopped at its limit may have more after it, as one that stopped for its size
    // does; only a page that returned all it was asked for can have stopped at its limit (reading
    // on after a short page, as a first version did, asked the emulator again and again).
    const more = page.moreResults === 'NOT_FINISHED' || (page.moreResults === 'MORE_RESULTS_AFTER_LIMIT' && results.length >= asked);
    if (!more || !page.endCursor || page.endCursor.length === 0) break;
    cursor = page.endCursor;
  }
  return found;
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
