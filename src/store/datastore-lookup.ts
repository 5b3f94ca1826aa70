/**
 * Lookups of one entity, sent through the client's `request_` (which adds the project, database
 * and, inside a started transaction, the transaction id) so the store gets the stored entity
 * undecoded (see `datastore-protos.ts`).
 */
import type { DatastoreRequest, Key } from '@google-cloud/datastore';
import type { CallOptions } from 'google-gax';
import { keyToProto, type RawEntity } from './datastore-protos';

/** What a lookup found (the entity and its version), and the transaction it began, if it began one. */
export interface LookupResult {
  entity?: RawEntity;
  /** The found entity's version (`EntityResult.version`, an int64 in decimal). */
  version?: string;
  transaction?: Uint8Array;
}

/** The part of a lookup response the store reads. */
interface LookupResponse {
  found?: { entity?: RawEntity | null; version?: string | number | null }[] | null;
  missing?: unknown[] | null;
  deferred?: unknown[] | null;
  transaction?: Uint8Array | null;
}

/** How often a deferred key is asked for again before giving up. */
const MAX_DEFERRALS = 5;

/**
 * Looks up one key with `requester` (the client, or a transaction). `beginTransaction` makes the
 * lookup begin a read-write transaction (`ReadOptions.newTransaction`), whose id it returns.
 */
export async function lookup(
  requester: DatastoreRequest,
  key: Key,
  beginTransaction: boolean,
  gaxOptions: CallOptions,
): Promise<LookupResult> {
  let readOptions: object | undefined = beginTransaction ? { newTransaction: { readWrite: {} } } : undefined;
  let transaction: Uint8Array | undefined;
  for (let attempt = 0; attempt <= MAX_DEFERRALS; attempt++) {
    const response = await send(requester, { keys: [keyToProto(key)], ...(readOptions && { readOptions }) }, gaxOptions);
    if (response.transaction && response.transaction.length > 0) {
      transaction = response.transaction;
      readOptions = { transaction };
    }
    const found = response.found?.[0];
    if (found?.entity) return { entity: found.entity, version: versionOf(found.version), transaction };
    if (!response.deferred?.length) return { transaction };
  }
  throw new Error(`the lookup of ${key.path.join('/')} was deferred ${MAX_DEFERRALS + 1} times`);
}

function versionOf(version: string | number | null | undefined): string | undefined {
  return version === undefined || version === null ? undefined : String(version);
}

function send(requester: DatastoreRequest, reqOpts: object, gaxOpts: CallOptions): Promise<LookupResponse> {
  return new Promise((resolve, reject) => {
    requester.request_({ client: 'DatastoreClient', method: 'lookup', reqOpts, gaxOpts }, (err, response) => {
      if (err) reject(err);
      else resolve((response ?? {}) as LookupResponse);
    });
  });
}
