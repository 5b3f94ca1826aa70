/**
 * Compare-and-swap of one entity on Datastore, the two ways `DatastoreStore.replaceIfUnchanged`
 * can do it:
 *
 * - conditional: ONE non-transactional `commit` whose upsert carries `baseVersion`; the server
 *   applies it only if the entity is still at that version, else reports `conflictDetected`;
 * - in a transaction, where `baseVersion` is not honoured: a lookup that begins the transaction
 *   (or `beginTransaction` first), a comparison of the version it found, and a commit (or a
 *   rollback when the version differs). A transaction that aborts on contention (under locking
 *   reads two of them deadlock until one times out) is run again, so that, as with `baseVersion`,
 *   the loser finds the new version and reports a conflict; contention that outlasts every retry
 *   is a `StoreUnavailableError`.
 */
import type { Datastore, Key } from '@google-cloud/datastore';
import type { CallOptions } from 'google-gax';
import { call } from './datastore-errors';
import { commitUpsert, rollBack, type MutationOutcome } from './datastore-commit';
import type { RawEntity } from './datastore-protos';
import { transactionalLookup } from './datastore-transaction';
import { withContentionRetry } from './retry';

/** How a store does its compare-and-swaps. */
export interface ReplaceConfig {
  datastore: Datastore;
  gaxOptions: CallOptions;
  /** One conditional commit (true), or a transaction (false). */
  conditionalWrites: boolean;
  /** In a transaction: begin it with the lookup (true), or with `beginTransaction` (false). */
  beginWithFirstRead: boolean;
}

/**
 * Writes `entity` (whose key is `key`) only if the stored entity is at `baseVersion`; a conflict
 * (the version differs, or the entity is gone) writes nothing.
 */
export function replaceAtVersion(config: ReplaceConfig, key: Key, entity: RawEntity, baseVersion: string): Promise<MutationOutcome> {
  return config.conditionalWrites
    ? call('commit', () => commitUpsert(config.datastore, entity, baseVersion, config.gaxOptions))
    : withContentionRetry(() => replaceInTransaction(config, key, entity, baseVersion));
}

async function replaceInTransaction(config: ReplaceConfig, key: Key, entity: RawEntity, baseVersion: string): Promise<MutationOutcome> {
  const { datastore, gaxOptions } = config;
  const tx = datastore.transaction();
  try {
    if (!config.beginWithFirstRead) await call('begin transaction', () => tx.run({ gaxOptions }));
    const { version } = await transactionalLookup(tx, key, gaxOptions);
    if (version !== baseVersion) {
      await rollBack(tx, gaxOptions);
      return { conflictDetected: true };
    }
    return await call('commit', () => commitUpsert(tx, entity, undefined, gaxOptions));
  } catch (error) {
    await rollBack(tx, gaxOptions);
    throw error;
  }
}
