/**
 * Compare-and-swap of one entity on Datastore, the two ways `DatastoreStore.replaceIfUnchanged`
 * can do it:
 *
 * - conditional: ONE non-transactional `commit` whose upsert carries `baseVersion`; the server
 *   applies it only if the entity is still at that version, else reports `conflictDetected`;
 * - in a transaction, for a backend that does not honour `baseVersion`: a lookup that begins the
 *   transaction (or `beginTransaction` first), a comparison of the version it found, and a commit
 *   (or a rollback when the version differs). A transaction that aborts on contention is run
 *   again, so that, as with `baseVersion`, the loser finds the new version and reports a conflict.
 *
 * The transactional way stays cheap under contention, where locking reads (Firestore) would make
 * every contender wait for the others' locks and abort: in this process, one contender per key is
 * in a transaction at a time. One that arrives meanwhile waits for it, then checks the version
 * with a plain lookup, and reports the conflict without a transaction when the entity changed
 * (the usual case: the other contender just wrote it); only if the version still matches does it
 * take its turn in a transaction.
 */
import type { Key } from '@google-cloud/datastore';
import { commitUpsert, rollBack, type MutationOutcome } from './commit';
import { BEGIN_TRANSACTION, lookup } from './lookup';
import type { RawEntity } from './protos';
import type { DatastoreRpc } from './rpc';
import { KeyGate } from './key-gate';
import { keyString } from '../../keys/keys';
import { withContentionRetry } from '../../locks/retry';

/** How a store does its compare-and-swaps. */
export interface ReplaceConfig {
  rpc: DatastoreRpc;
  /** One conditional commit (true), or a transaction (false). */
  conditionalWrites: boolean;
  /** In a transaction: begin it with the lookup (true), or with `beginTransaction` (false). */
  beginWithFirstRead: boolean;
  /** Lets one transactional compare-and-swap per key run at a time. */
  gate: KeyGate;
}

const CONFLICT: MutationOutcome = Object.freeze({ conflictDetected: true });

/**
 * Writes `entity` (whose key is `key`) only if the stored entity is at `baseVersion`; a conflict
 * (the version differs, or the entity is gone) writes nothing.
 */
export function replaceAtVersion(config: ReplaceConfig, key: Key, entity: RawEntity, baseVersion: string): Promise<MutationOutcome> {
  return config.conditionalWrites
    ? commitUpsert(config.rpc, entity, baseVersion)
    : replaceInTransaction(config, key, entity, baseVersion);
}

async function replaceInTransaction(config: ReplaceConfig, key: Key, entity: RawEntity, baseVersion: string): Promise<MutationOutcome> {
  const id = keyString(key);
  if (config.gate.busy(id)) {
    await config.gate.idle(id);
    const { version } = await lookup(config.rpc, key);
    if (version !== baseVersion) return CONFLICT;
  }
  return config.gate.alone(id, () => withContentionRetry(() => transactionOnce(config, key, entity, baseVersion)));
}

async function transactionOnce(config: ReplaceConfig, key: Key, entity: RawEntity, baseVersion: string): Promise<MutationOutcome> {
  const { rpc } = config;
  let transaction = config.beginWithFirstRead ? undefined : await rpc.beginTransaction();
  try {
    const found = await lookup(rpc, key, transaction ? { transaction } : BEGIN_TRANSACTION);
    transaction ??= found.transaction;
    if (found.version !== baseVersion) {
      await rollBack(rpc, transaction);
      return CONFLICT;
    }
    return await commitUpsert(rpc, entity, undefined, transaction ?? (await rpc.beginTransaction()));
  } catch (error) {
    await rollBack(rpc, transaction);
    throw error;
  }
}
