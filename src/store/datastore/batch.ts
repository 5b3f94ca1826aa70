/**
 * Many kickoffs at once on Datastore (docs/design.md, section 5, "Many kickoffs at once"): `readMany` is
 * one lookup of up to 1,000 keys; `replaceMany` writes each entity at the version it was read at,
 * with its ledger record, in one of two ways, as the backend check found:
 *
 * - conditional (Datastore, the legacy emulator): the ledger records first, in NON_TRANSACTIONAL
 *   commits, then the entities in NON_TRANSACTIONAL commits whose upserts each carry their own
 *   `baseVersion` (`0` for an entity read absent): the server applies those still at their
 *   version and reports `conflictDetected` on the others. A non-transactional commit is not
 *   atomic, so the record goes first: an entity is never written without its record, and a record
 *   left by a conflict or a crash names a step its entity does not run, which the sweep clears.
 *   The sweep may clear a record whose entity is about to be written, too: so the records of the
 *   entities written are then looked up, and any gone put back (`restoreRecords`).
 *   Each kickoff record (`ConditionalWrite.marker`) rides in its entity's commit, with the
 *   `baseVersion` it was read at: stored with the entity, never after it (a crash between two
 *   commits cannot leave a started chain unmarked). The commit is not atomic, so a marker is
 *   stored beside an entity that met a conflict too; the caller, which wrote it, reads it again.
 * - in transactions (the Firestore emulator, which ignores `baseVersion`): a transaction per
 *   {@link TRANSACTION_WRITES} entities reads them all (and their markers) in one lookup, compares
 *   their versions and commits the unchanged ones with their records and unchanged markers; one that aborts on contention is run again,
 *   and when it keeps aborting it is split in halves, so a contended entity fails alone.
 *
 * A NON_TRANSACTIONAL commit aborted on contention (ABORTED: it applied nothing) is sent again
 * under the contention retry, as the transactions are run again: Datastore may abort writes to one
 * entity close together, and the legacy emulator, loaded, aborts a commit to an entity whose
 * previous commit it is still applying (measured 2026-11-29). When every attempt aborts, the
 * commit's writes fail with `StoreUnavailableError` (its cause the `ContentionError`).
 *
 * Commits stay within Datastore's 500 mutations and its request size. A commit the store refuses
 * (`StoreRejectedError`: an entity too large, a value Datastore cannot hold) is split in halves
 * until the refused write is alone, so it is reported on that write only.
 */
import type { Key } from '@google-cloud/datastore';
import { ContentionError, StoreRejectedError, StoreUnavailableError } from '../../errors/errors';
import type { ConditionalOutcome, ConditionalWrite, VersionedRead } from '../../types';
import { ABSENT_VERSION as ABSENT, rollBack } from './commit';
import { entityProto } from './encode';
import { lookupMany } from './lookup';
import { decodeEntity, type RawEntity, type RawValue } from './protos';
import type { DatastoreRpc, Mutation } from './rpc';
import { EntityVersion } from './snapshot';
import { writeArgs } from './values';
import { keyString } from '../../keys/keys';
import { LEDGER_UNINDEXED, ledgerKey, ledgerProperties } from '../ledger-entity';
import { withContentionRetry } from '../../locks/retry';

/** Datastore's most mutations in one commit. */
export const MAX_MUTATIONS = 500;
/** Datastore's most keys in one lookup. */
const MAX_LOOKUP_KEYS = 1_000;
/** Entities per transaction where compare-and-swaps run as transactions (each with its record and its kickoff record: three mutations). */
export const TRANSACTION_WRITES = 150;
/** The largest commit request sent, bytes (Datastore takes 10 MiB). */
const MAX_COMMIT_BYTES = 8 * 1024 * 1024;

/** What the batch operations need from their store. */
export interface BatchConfig {
  rpc: DatastoreRpc;
  ledgerKind: string;
  conditionalWrites: boolean;
  /** Told the namespace of every ledger record written. */
  onLedgerNamespace(namespace: string): void;
}

/** Reads `keys` in one lookup (at most 1,000), absent ones included. */
export async function readMany(rpc: DatastoreRpc, keys: readonly Key[]): Promise<VersionedRead[]> {
  for (const key of keys) keyString(key);
  const found = await lookupMany(rpc, keys);
  return found.map(({ entity, version }, i) => {
    const key = keys[i]!;
    if (!entity) return { key, properties: undefined, version: new EntityVersion(ABSENT, emptyShape()) };
    if (version === undefined || version === '') throw new StoreUnavailableError('Datastore lookup returned no entity version');
    const { properties, ...shape } = decodeEntity(entity);
    return { key, properties, version: new EntityVersion(version, shape) };
  });
}

/** One write, encoded: the entity, its record, and the version it was read at. */
interface Encoded {
  index: number;
  key: Key;
  entity: RawEntity;
  record: RawEntity;
  recordKey: Key;
  /** The kickoff's record of the chain, stored with the entity (see `ConditionalWrite.marker`). */
  marker?: RawEntity;
  markerKey?: Key;
  /** The marker's version as read, when it is written only at that version. */
  markerBase?: string;
  base: string;
  bytes: number;
}

/** Writes each entity still at its read's version, with its record (see the file's comment). */
export async function replaceMany(config: BatchConfig, writes: readonly ConditionalWrite[]): Promise<ConditionalOutcome[]> {
  const outcomes: ConditionalOutcome[] = new Array<ConditionalOutcome>(writes.length);
  const encoded: Encoded[] = [];
  writes.forEach((write, index) => {
    try {
      encoded.push(encode(config, write, index));
    } catch (error) {
      outcomes[index] = failed(error);
    }
  });
  if (config.conditionalWrites) await conditional(config, encoded, outcomes);
  else await inTransactions(config, encoded, outcomes);
  return outcomes;
}

function encode(config: BatchConfig, write: ConditionalWrite, index: number): Encoded {
  const version: unknown = write.read.version;
  if (!(version instanceof EntityVersion)) throw new TypeError('replaceMany needs reads that a DatastoreStore made');
  const key = write.read.key;
  keyString(key);
  const entity = entityProto(writeArgs(key, write.properties, write.excludeFromIndexes, version.shape));
  const recordKey = ledgerKey(config.ledgerKind, write.record.key.namespace, write.record.id);
  const record = entityProto(writeArgs(recordKey, ledgerProperties(write.record), LEDGER_UNINDEXED));
  const m = write.marker;
  const markerVersion: unknown = m?.read?.version;
  if (m?.read && !(markerVersion instanceof EntityVersion)) throw new TypeError('replaceMany needs marker reads that a DatastoreStore made');
  const marker = m ? entityProto(writeArgs(m.key, m.properties, m.excludeFromIndexes, markerVersion instanceof EntityVersion ? markerVersion.shape : undefined)) : undefined;
  return {
    index, key, entity, record, recordKey, base: version.version, bytes: approxBytes(entity) + approxBytes(record) + (marker ? approxBytes(marker) : 0),
    ...(m && marker ? { marker, markerKey: m.key } : {}), ...(markerVersion instanceof EntityVersion ? { markerBase: markerVersion.version } : {}),
  };
}

/** The mutations of one entity's write in its commit: the entity at its version, then its marker (at its own, when read). */
function entityMutations(w: Encoded): Mutation[] {
  const entity: Mutation = { upsert: w.entity, baseVersion: w.base };
  if (!w.marker) return [entity];
  return [entity, w.markerBase === undefined ? { upsert: w.marker } : { upsert: w.marker, baseVersion: w.markerBase }];
}

/** Records first, then the entities at their versions, each in commits of at most {@link MAX_MUTATIONS}. */
async function conditional(config: BatchConfig, writes: Encoded[], outcomes: ConditionalOutcome[]): Promise<void> {
  const recorded: Encoded[] = [];
  for (const chunk of chunks(writes, MAX_MUTATIONS, (w) => approxBytes(w.record))) {
    await splitting(chunk, outcomes, async (part) => {
      for (const w of part) config.onLedgerNamespace(w.key.namespace ?? '');
      await withContentionRetry(() => config.rpc.commit(part.map((w) => ({ upsert: w.record }))));
      recorded.push(...part);
    });
  }
  recorded.sort((a, b) => a.index - b.index);
  const perWrite = recorded.some((w) => w.marker) ? 2 : 1;
  for (const chunk of chunks(recorded, Math.floor(MAX_MUTATIONS / perWrite), (w) => approxBytes(w.entity) + (w.marker ? approxBytes(w.marker) : 0))) {
    await splitting(chunk, outcomes, async (part) => {
      const mutations: Mutation[] = [];
      const at = part.map((w) => {
        const first = mutations.length;
        mutations.push(...entityMutations(w));
        return first;
      });
      const response = await withContentionRetry(() => config.rpc.commit(mutations));
      part.forEach((w, i) => {
        const result = response.mutationResults?.[at[i]!];
        outcomes[w.index] = result?.conflictDetected === true ? { outcome: 'conflict' } : { outcome: 'written' };
      });
    });
  }
  await restoreRecords(config, recorded.filter((w) => outcomes[w.index]?.outcome === 'written'), outcomes);
}

/**
 * Puts back the records of entities written whose record is gone. Between a record's commit and
 * its entity's, the sweep sees a record whose entity is absent (or runs another step), which it
 * clears; its clearing reads the entity again in a transaction, so it either sees the entity and
 * keeps the record, or commits before the entity's write, and then this lookup, after that write,
 * finds the record gone and puts it back: a written entity is never left without its record. A
 * record this cannot check or put back fails its write's outcome with `StoreUnavailableError` (the
 * entity is written: the caller's next round finds its own chain).
 */
async function restoreRecords(config: BatchConfig, written: Encoded[], outcomes: ConditionalOutcome[]): Promise<void> {
  for (let start = 0; start < written.length; start += MAX_LOOKUP_KEYS) {
    const part = written.slice(start, start + MAX_LOOKUP_KEYS);
    try {
      const found = await lookupMany(config.rpc, part.map((w) => w.recordKey));
      const gone = part.filter((_, i) => !found[i]!.entity);
      for (const chunk of chunks(gone, MAX_MUTATIONS, (w) => approxBytes(w.record))) await withContentionRetry(() => config.rpc.commit(chunk.map((w) => ({ upsert: w.record }))));
    } catch (error) {
      const cause = error instanceof Error ? error.message : String(error);
      for (const w of part) outcomes[w.index] = failed(new StoreUnavailableError(`the entity was written, but whether its ledger record is still there is not known: ${cause}`));
    }
  }
}

/** A transaction per chunk; a chunk that keeps meeting contention is split, down to one entity. */
async function inTransactions(config: BatchConfig, writes: Encoded[], outcomes: ConditionalOutcome[]): Promise<void> {
  for (const chunk of chunks(writes, TRANSACTION_WRITES, (w) => w.bytes)) {
    await splitting(chunk, outcomes, async (part) => {
      for (const w of part) config.onLedgerNamespace(w.key.namespace ?? '');
      const written = await withContentionRetry(() => transactionOnce(config.rpc, part));
      part.forEach((w, i) => (outcomes[w.index] = written[i] ? { outcome: 'written' } : { outcome: 'conflict' }));
    }, true);
  }
}

/** One transaction: reads every entity, writes those still at their version; says which were written. */
async function transactionOnce(rpc: DatastoreRpc, part: Encoded[]): Promise<boolean[]> {
  const transaction = await rpc.beginTransaction();
  try {
    const marked = part.filter((w) => w.markerKey !== undefined && w.markerBase !== undefined);
    const found = await lookupMany(rpc, [...part.map((w) => w.key), ...marked.map((w) => w.markerKey!)], { transaction });
    const at = (read: (typeof found)[number], base: string): boolean => (read.entity ? read.version === base : base === ABSENT);
    const unchanged = part.map((w, i) => at(found[i]!, w.base));
    const markerUnchanged = new Map(marked.map((w, i) => [w, at(found[part.length + i]!, w.markerBase!)]));
    const mutations: Mutation[] = part.flatMap((w, i) => (unchanged[i]
      ? [{ upsert: w.record }, { upsert: w.entity }, ...(w.marker && markerUnchanged.get(w) !== false ? [{ upsert: w.marker }] : [])]
      : []));
    if (mutations.length === 0) await rollBack(rpc, transaction);
    else await rpc.commit(mutations, transaction);
    return unchanged;
  } catch (error) {
    await rollBack(rpc, transaction);
    throw error;
  }
}

/**
 * Runs `commit` on `part`; when the store refuses it (or, with `onContention`, it keeps aborting on
 * contention), runs it again on each half, so only the write at fault fails. Any other error fails
 * the part's writes with it.
 */
async function splitting(part: Encoded[], outcomes: ConditionalOutcome[], commit: (part: Encoded[]) => Promise<void>, onContention = false): Promise<void> {
  try {
    await commit(part);
  } catch (error) {
    const contended = onContention && (error instanceof ContentionError || (error instanceof StoreUnavailableError && error.cause instanceof ContentionError));
    if (part.length > 1 && (error instanceof StoreRejectedError || contended)) {
      const half = Math.ceil(part.length / 2);
      await splitting(part.slice(0, half), outcomes, commit, onContention);
      await splitting(part.slice(half), outcomes, commit, onContention);
      return;
    }
    for (const w of part) outcomes[w.index] = failed(error);
  }
}

/** Consecutive runs of at most `count` items and {@link MAX_COMMIT_BYTES}. */
function chunks(items: Encoded[], count: number, bytes: (item: Encoded) => number): Encoded[][] {
  const out: Encoded[][] = [];
  let current: Encoded[] = [];
  let size = 0;
  for (const item of items) {
    const b = bytes(item);
    if (current.length > 0 && (current.length >= count || size + b > MAX_COMMIT_BYTES)) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += b;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** About how many bytes an entity takes in a request (names and values; an upper bound's rough guess). */
function approxBytes(entity: RawEntity): number {
  let total = 64;
  for (const [name, value] of Object.entries(entity.properties ?? {})) total += name.length + valueBytes(value);
  return total;
}

function valueBytes(value: RawValue): number {
  if (value.stringValue) return Buffer.byteLength(value.stringValue);
  if (value.blobValue) return value.blobValue.length;
  if (value.arrayValue?.values) return value.arrayValue.values.reduce((sum, v) => sum + valueBytes(v), 8);
  if (value.entityValue) return approxBytes(value.entityValue);
  return 16;
}

function failed(error: unknown): ConditionalOutcome {
  return { outcome: 'error', error: error instanceof Error ? error : new Error(String(error)) };
}

function emptyShape(): { integralDoubles: Set<string>; unindexed: Set<string> } {
  return { integralDoubles: new Set(), unindexed: new Set() };
}
