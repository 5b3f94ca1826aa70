/**
 * The removal of finished steps' ledger records on Datastore (`Store.retireLedgerMany`; docs/design.md,
 * section 5). A record named with the version its step read it at (`LedgerRef.version`, the usual
 * case: the finished step read its record with its entity) is deleted at that version, with nothing
 * read. The others are judged: one lookup reads them and their entities, and `needed(entity, id)`
 * decides on each entity as read. Then one commit:
 *
 * - conditional (Datastore, the legacy emulator): NON_TRANSACTIONAL, each delete carrying the
 *   record's version (`baseVersion`: as the step read it, or as just looked up). A record written
 *   again since (the same step scheduled again: its record is always written with its entity) is at
 *   a new version, so its delete meets a conflict and the record stays. No entity is locked.
 * - in a transaction (the Firestore emulator, which ignores `baseVersion`): every record is read in
 *   the transaction and compared with its version there; run again on contention.
 *
 * At most 500 records a call: 1,000 keys, Datastore's most in one lookup.
 */
import type { Key } from '@google-cloud/datastore';
import { rollBack } from './commit';
import { lookupMany, type ManyResult } from './lookup';
import { decodeEntityProperties, keyToProto } from './protos';
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

/** Removes the records named that are still at their version, or that `needed` no longer keeps (see the file's comment). */
export async function retireLedgerMany(config: RetireConfig, records: readonly LedgerRef[], needed: LedgerNeeded): Promise<void> {
  if (records.length > MAX_RETIRED) throw new RangeError(`retireLedgerMany: at most ${MAX_RETIRED} records a call; got ${records.length}`);
  // Each record once: a commit may not hold two mutations of one entity.
  const named = [...new Map(records.map((ref) => nameOf(config, ref)).map((n) => [n.recordId, n])).values()];
  if (named.length === 0) return;
  if (config.conditionalWrites) await commitUnneeded(config, named, needed);
  else await withContentionRetry(() => inTransaction(config, named, needed));
}

/** A record to remove: its key (and that as a string), and the version its step read it at (a Datastore version), if given. */
interface Named {
  ref: LedgerRef;
  recordKey: Key;
  recordId: string;
  version: string | undefined;
}

/** Deletes the versioned records at their versions, and the judged ones no longer needed at the versions looked up, in one non-transactional commit. */
async function commitUnneeded(config: RetireConfig, named: readonly Named[], needed: LedgerNeeded): Promise<void> {
  const judged = named.filter((n) => n.version === undefined);
  const found = judged.length > 0 ? await read(config, judged) : new Map<string, ManyResult>();
  const mutations: Mutation[] = [];
  for (const n of named) {
    const version = n.version ?? unneededAt(n, found, needed);
    if (version !== undefined) mutations.push({ delete: keyToProto(n.recordKey), baseVersion: version });
  }
  if (mutations.length > 0) await config.rpc.commit(mutations);
}

/** Reads every record (and the judged ones' entities) and deletes in one transaction. */
async function inTransaction(config: RetireConfig, named: readonly Named[], needed: LedgerNeeded): Promise<void> {
  const transaction = await config.rpc.beginTransaction();
  try {
    const found = await read(config, named, transaction);
    const mutations: Mutation[] = [];
    for (const n of named) {
      const gone = n.version !== undefined ? found.get(n.recordId)?.version === n.version : unneededAt(n, found, needed) !== undefined;
      if (gone) mutations.push({ delete: keyToProto(n.recordKey) });
    }
    if (mutations.length === 0) await rollBack(config.rpc, transaction);
    else await config.rpc.commit(mutations, transaction);
  } catch (error) {
    await rollBack(config.rpc, transaction);
    throw error;
  }
}

function nameOf(config: RetireConfig, ref: LedgerRef): Named {
  const version = typeof ref.version === 'string' && ref.version !== '' ? ref.version : undefined;
  const recordKey = ledgerKey(config.ledgerKind, ref.key.namespace, ref.id);
  return { ref, recordKey, recordId: keyString(recordKey), version };
}

/** One lookup of the records, and of the entities of those to judge (each entity once). */
async function read(config: RetireConfig, named: readonly Named[], transaction?: Uint8Array): Promise<Map<string, ManyResult>> {
  const entityKeys = [...new Map(named.filter((n) => n.version === undefined).map((n) => [keyString(n.ref.key), n.ref.key])).values()];
  const all = [...named.map((n) => n.recordKey), ...entityKeys];
  const results = await lookupMany(config.rpc, all, transaction ? { transaction } : undefined);
  return new Map(all.map((key, i) => [keyString(key), results[i]!]));
}

/** The version a judged record was found at, when its entity, as read, no longer needs it; undefined when it stays or is gone. */
function unneededAt(n: Named, found: Map<string, ManyResult>, needed: LedgerNeeded): string | undefined {
  const record = found.get(n.recordId);
  if (!record?.entity || record.version === undefined) return undefined; // already gone
  const entity = found.get(keyString(n.ref.key))?.entity;
  return needed(entity ? decodeEntityProperties(entity) : undefined, n.ref.id) ? undefined : record.version;
}
