/**
 * Lookups of one entity, undecoded (see `datastore-protos.ts`), with its version, in a transaction
 * or outside one; a lookup may begin the transaction it reads in (`ReadOptions.newTransaction`).
 */
import type { Key } from '@google-cloud/datastore';
import { unavailable } from './errors';
import { keyToProto, type RawEntity, type RawKey } from './protos';
import type { DatastoreRpc, ReadOptions } from './rpc';

/** What a lookup found (the entity and its version), and the transaction it began, if it began one. */
export interface LookupResult {
  entity?: RawEntity;
  /** The found entity's version (`EntityResult.version`, an int64 in decimal). */
  version?: string;
  transaction?: Uint8Array;
}

/** How often a deferred key is asked for again before giving up. */
const MAX_DEFERRALS = 5;

/** Begins a read-write transaction with the read. */
export const BEGIN_TRANSACTION: ReadOptions = { newTransaction: { readWrite: {} } };

/** Looks up one key: outside any transaction, in `readOptions`'s, or beginning one. */
export async function lookup(rpc: DatastoreRpc, key: Key, readOptions?: ReadOptions): Promise<LookupResult> {
  let options = readOptions;
  let transaction: Uint8Array | undefined;
  for (let attempt = 0; attempt <= MAX_DEFERRALS; attempt++) {
    const response = await rpc.lookup([keyToProto(key)], options);
    if (response.transaction && response.transaction.length > 0) {
      transaction = response.transaction;
      options = { transaction };
    }
    const found = response.found?.[0];
    if (found?.entity) return { entity: found.entity, version: versionOf(found.version), transaction };
    if (!response.deferred?.length) return { transaction };
  }
  throw unavailable('lookup', `the lookup of ${key.path.join('/')} was deferred ${MAX_DEFERRALS + 1} times`);
}

function versionOf(version: string | number | null | undefined): string | undefined {
  return version === undefined || version === null ? undefined : String(version);
}

/** What a batched lookup found of one key: the entity (undefined when missing) and its version. */
export interface ManyResult {
  entity?: RawEntity;
  /** The found entity's version; undefined when the entity is missing. */
  version?: string;
}

/**
 * Looks up many keys in one call (Datastore takes up to 1,000), asking again for the keys the
 * server deferred; answers one result per key, in order. In `readOptions`'s transaction, or
 * outside any; a lookup that begins a transaction is not supported here (begin it first).
 */
export async function lookupMany(rpc: DatastoreRpc, keys: readonly Key[], readOptions?: { transaction: Uint8Array }): Promise<ManyResult[]> {
  const ids = keys.map((key) => rawKeyId(keyToProto(key)));
  const results = new Map<string, ManyResult>();
  let pending = keys.map((key) => keyToProto(key));
  for (let attempt = 0; attempt <= MAX_DEFERRALS && pending.length > 0; attempt++) {
    const response = await rpc.lookup(pending, readOptions);
    for (const found of response.found ?? []) {
      if (found.entity?.key) results.set(rawKeyId(found.entity.key), { entity: found.entity, version: versionOf(found.version) });
    }
    pending = response.deferred ?? [];
  }
  if (pending.length > 0) throw unavailable('lookup', `${pending.length} keys were deferred ${MAX_DEFERRALS + 1} times`);
  return ids.map((id) => results.get(id) ?? {});
}

/** One string per key proto: namespace and path (ids as decimal text), equal for equal keys. */
function rawKeyId(key: RawKey): string {
  const path = (key.path ?? []).map((e) => {
    const name = e.idType === 'id' || !e.name ? null : e.name;
    const id = e.idType === 'name' || e.id === undefined || e.id === null || String(e.id) === '0' ? null : String(e.id);
    return [e.kind ?? '', name, name === null ? id : null];
  });
  return JSON.stringify([key.partitionId?.namespaceId ?? '', path]);
}
