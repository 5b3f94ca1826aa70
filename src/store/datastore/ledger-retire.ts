/**
 * The removal of finished steps' ledger records on Datastore (`Store.retireLedgerMany`; docs/design.md,
 * section 5): one lookup reads the records and their entities, `needed(entity, id)` judges each
 * record on its entity as read, and the records no longer needed are deleted:
 *
 * - conditional (Datastore, the legacy emulator): in one NON_TRANSACTIONAL commit whose deletes
 *   each carry the version the record was read at (`baseVersion`). A record written again since
 *   the lookup (the same step scheduled again: its record is always written with its entity) is at
 *   a new version, so its delete meets a conflict and the record stays. No entity is locked.
 * - in a transaction (the Firestore emulator, which ignores `baseVersion`): the lookup and the
 *   commit in one transaction, run again on contention.
 *
 * At most 500 records a call: 1,000 keys, Datastore's most in one lookup.
 */
import type { Key } from '@google-cloud/datastore';
import { rollBack } from './commit';
import { lookupMany, type ManyResult } from './lookup';
import { decodeEntity, keyToProto } from './protos';
import type { DatastoreRpc, Mutation } from './rpc';
import { keyString } from '../../keys/keys';
import { ledgerKey } from '../ledger-entity';
import { withContentionRetry } from '../../locks/retry';
import type { LedgerNeeded, LedgerRef } from '../../types';

/** The most records one call removes. */
export const MAX_RETIRED = 500;

/** What the removal needs from its store. */
export interface RetireConfig {
  rpc: DatastoreRpc;
  ledgerKind: string;
  conditionalWrites: boolean;
}

/** Removes the records named that `needed` no longer keeps (see the file's comment). */
export async function retireLedgerMany(config: RetireConfig, records: readonly LedgerRef[], needed: LedgerNeeded): Promise<void> {
  if (records.length > MAX_RETIRED) throw new RangeError(`retireLedgerMany: at most ${MAX_RETIRED} records a call; got ${records.length}`);
  const unique = distinct(records);
  if (unique.length === 0) return;
  if (config.conditionalWrites) await commitUnneeded(config, unique, needed);
  else await withContentionRetry(() => inTransaction(config, unique, needed));
}

/** Reads outside a transaction, then deletes each unneeded record at the version read. */
async function commitUnneeded(config: RetireConfig, records: readonly LedgerRef[], needed: LedgerNeeded): Promise<void> {
  const { recordKeys, found } = await read(config, records);
  const mutations = unneeded(records, recordKeys, found, needed).map(({ i, version }): Mutation => ({ delete: keyToProto(recordKeys[i]!), baseVersion: version }));
  if (mutations.length > 0) await config.rpc.commit(mutations);
}

/** Reads and deletes in one transaction. */
async function inTransaction(config: RetireConfig, records: readonly LedgerRef[], needed: LedgerNeeded): Promise<void> {
  const transaction = await config.rpc.beginTransaction();
  try {
    const { recordKeys, found } = await read(config, records, transaction);
    const mutations = unneeded(records, recordKeys, found, needed).map(({ i }): Mutation => ({ delete: keyToProto(recordKeys[i]!) }));
    if (mutations.length === 0) await rollBack(config.rpc, transaction);
    else await config.rpc.commit(mutations, transaction);
  } catch (error) {
    await rollBack(config.rpc, transaction);
    throw error;
  }
}

/** One lookup of the records, then of their entities (each entity once). */
async function read(config: RetireConfig, records: readonly LedgerRef[], transaction?: Uint8Array): Promise<{ recordKeys: Key[]; found: Map<string, ManyResult> }> {
  const recordKeys = records.map((r) => ledgerKey(config.ledgerKind, r.key.namespace, r.id));
  const entityKeys = [...new Map(records.map((r) => [keyString(r.key), r.key])).values()];
  const all = [...recordKeys, ...entityKeys];
  const results = await lookupMany(config.rpc, all, transaction ? { transaction } : undefined);
  return { recordKeys, found: new Map(all.map((key, i) => [keyString(key), results[i]!])) };
}

/** The records found whose entity, as read, no longer needs them, with the versions they were read at. */
function unneeded(records: readonly LedgerRef[], recordKeys: readonly Key[], found: Map<string, ManyResult>, needed: LedgerNeeded): { i: number; version: string }[] {
  const out: { i: number; version: string }[] = [];
  records.forEach((r, i) => {
    const record = found.get(keyString(recordKeys[i]!));
    if (!record?.entity || record.version === undefined) return; // already gone
    const entity = found.get(keyString(r.key))?.entity;
    if (!needed(entity ? decodeEntity(entity).properties : undefined, r.id)) out.push({ i, version: record.version });
  });
  return out;
}

/** The records named, each once (a commit may not hold two mutations of one entity). */
function distinct(records: readonly LedgerRef[]): LedgerRef[] {
  return [...new Map(records.map((r) => [`${keyString(r.key)}#${r.id}`, r])).values()];
}
