/**
 * Commits of one mutation sent through the client's `request_` (which adds the project, database
 * and, on a started transaction, `TRANSACTIONAL` mode and the transaction id; on the client itself,
 * `NON_TRANSACTIONAL` mode), so the store can set `baseVersion` and read the mutation's result,
 * which the client's `save()` and `Transaction.commit()` neither offer nor report.
 */
import type { DatastoreRequest, Transaction } from '@google-cloud/datastore';
import { entity as clientEntity } from '@google-cloud/datastore/build/src/entity';
import type { CallOptions } from 'google-gax';
import type { RawEntity } from './datastore-protos';
import type { WriteArgs } from './datastore-values';

/** What the server did with a mutation. */
export interface MutationOutcome {
  /** The entity's version after the mutation (an int64 in decimal), if the server said. */
  version?: string;
  /** True when `baseVersion` did not match: the mutation was not applied. */
  conflictDetected: boolean;
}

/** The part of a commit response the store reads. */
interface CommitResponse {
  mutationResults?: { version?: string | number | null; conflictDetected?: boolean | null }[] | null;
}

/**
 * The entity proto of a write, built with the client's own encoding (`entity.entityToEntityProto`,
 * `entity.keyToKeyProto`): exactly what `Transaction.save` would send for the same arguments.
 */
export function entityProto(args: WriteArgs): RawEntity {
  const proto = clientEntity.entityToEntityProto({ data: args.data, excludeFromIndexes: args.excludeFromIndexes });
  proto.key = clientEntity.keyToKeyProto(args.key);
  return proto as RawEntity;
}

/**
 * Commits one upsert of `entity` with `requester` (the client: non-transactional; a started
 * transaction: in it). With `baseVersion`, the server applies it only if the entity is still at
 * that version (`Mutation.base_version`).
 */
export async function commitUpsert(
  requester: DatastoreRequest,
  entity: RawEntity,
  baseVersion: string | undefined,
  gaxOptions: CallOptions,
): Promise<MutationOutcome> {
  const mutation = baseVersion === undefined ? { upsert: entity } : { upsert: entity, baseVersion };
  const response = await send(requester, { mutations: [mutation] }, gaxOptions);
  const result = response.mutationResults?.[0];
  const version = result?.version;
  return {
    ...(version !== undefined && version !== null && { version: String(version) }),
    conflictDetected: result?.conflictDetected === true,
  };
}

/** Rolls back a failed transaction; a rollback that fails too changes nothing for the caller. */
export async function rollBack(tx: Transaction, gaxOptions: CallOptions): Promise<void> {
  try {
    await tx.rollback(gaxOptions);
  } catch {
    // Not started, already rolled back by a failed commit, or unreachable: the server drops it.
  }
}

function send(requester: DatastoreRequest, reqOpts: object, gaxOpts: CallOptions): Promise<CommitResponse> {
  return new Promise((resolve, reject) => {
    requester.request_({ client: 'DatastoreClient', method: 'commit', reqOpts, gaxOpts }, (err, response) => {
      if (err) reject(err);
      else resolve((response ?? {}) as CommitResponse);
    });
  });
}
