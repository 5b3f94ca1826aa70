/**
 * Lookups of one entity, undecoded (see `datastore-protos.ts`), with its version, in a transaction
 * or outside one; a lookup may begin the transaction it reads in (`ReadOptions.newTransaction`).
 */
import type { Key } from '@google-cloud/datastore';
import { unavailable } from './datastore-errors';
import { keyToProto, type RawEntity } from './datastore-protos';
import type { DatastoreRpc, ReadOptions } from './datastore-rpc';

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
