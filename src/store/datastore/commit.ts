/**
 * Commits of one upsert, which report what the server did with it: the entity's new version, or
 * that `baseVersion` did not match (`conflictDetected`: nothing was written).
 */
import type { RawEntity } from './protos';
import type { DatastoreRpc } from './rpc';

/** The `baseVersion` of a write that must find no entity: Datastore's version of "absent". */
export const ABSENT_VERSION = '0';

/** What the server did with a mutation. */
export interface MutationOutcome {
  /** The entity's version after the mutation (an int64 in decimal), if the server said. */
  version?: string;
  /** True when `baseVersion` did not match: the mutation was not applied. */
  conflictDetected: boolean;
}

/**
 * Commits one upsert of `entity`: in `transaction`, or non-transactionally without one. With
 * `baseVersion`, the server applies it only if the entity is still at that version
 * (`Mutation.base_version`).
 */
export async function commitUpsert(
  rpc: DatastoreRpc,
  entity: RawEntity,
  baseVersion: string | undefined,
  transaction?: Uint8Array,
): Promise<MutationOutcome> {
  const mutation = baseVersion === undefined ? { upsert: entity } : { upsert: entity, baseVersion };
  const response = await rpc.commit([mutation], transaction);
  const result = response.mutationResults?.[0];
  const version = result?.version;
  return {
    ...(version !== undefined && version !== null && { version: String(version) }),
    conflictDetected: result?.conflictDetected === true,
  };
}

/** Rolls back a failed transaction; a rollback that fails too changes nothing for the caller. */
export async function rollBack(rpc: DatastoreRpc, transaction: Uint8Array | undefined): Promise<void> {
  if (!transaction) return;
  try {
    await rpc.rollback(transaction);
  } catch {
    // Already rolled back by a failed commit, or unreachable: the server drops it.
  }
}
