/**
 * What a Datastore backend supports, checked once per client (placeholder: trusts it).
 */
import type { DatastoreClient } from '@google-cloud/datastore';
import type { Logger } from '../types';
import type { DatastoreRpc } from './datastore-rpc';

/** How the store talks to its backend. */
export interface Backend {
  /** `replaceIfUnchanged` is one commit with `baseVersion` (else a transaction). */
  conditionalWrites: boolean;
  /** A transaction begins with its first lookup (else with `beginTransaction`). */
  beginWithFirstRead: boolean;
}

/** The backend of `client`: the overrides, and what the check finds for the rest. */
export async function backendOf(_client: DatastoreClient, _rpc: DatastoreRpc, overrides: Partial<Backend>, _logger: Logger): Promise<Backend> {
  return { conditionalWrites: overrides.conditionalWrites ?? true, beginWithFirstRead: overrides.beginWithFirstRead ?? true };
}
