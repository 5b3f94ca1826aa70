/**
 * `readMany` and `replaceMany` (`scheduleMany()`, fan-out): many documents read in one `getAll`,
 * each absent one at its own version (absent), and written back each in one atomic batch of its
 * own: the entity's conditional write (`replace.ts`), its ledger record, and the kickoff's marker
 * when there is one. Firestore's batch is atomic, unlike Datastore's non-transactional commit: a
 * record is never stored for an entity that met a conflict. The marker is written only while it
 * is still at the version read; when a batch with one is refused, it is sent again without the
 * marker, so a marker changed meanwhile never stops its entity's write (a refusal of that second
 * batch is the entity's conflict). Batches go out concurrently, at most {@link CONCURRENCY} at once.
 */
import type { Key } from '@google-cloud/datastore';
import type { Firestore } from '@google-cloud/firestore';
import type { ConditionalOutcome, ConditionalWrite, VersionedRead } from '../../types';
import { ledgerKey, ledgerProperties } from '../ledger-entity';
import { withDeadline } from './deadline';
import { call, isConflict, toStoreError } from './errors';
import { documentOf } from './paths';
import { addConditionalWrite } from './replace';
import { fromDocument, toDocument } from './values';
import { DocumentVersion, documentVersion } from './version';

/** Batches in flight at once. */
const CONCURRENCY = 32;

/** Reads every key in one `getAll` (at most 1,000); a missing document is absent at an absent version. */
export async function readMany(firestore: Firestore, timeoutMs: number, keys: readonly Key[]): Promise<VersionedRead[]> {
  if (keys.length > 1_000) throw new RangeError('readMany reads at most 1,000 keys a call');
  if (keys.length === 0) return [];
  const refs = keys.map((key) => documentOf(firestore, key));
  const snapshots = await call('lookup', timeoutMs, () => firestore.getAll(...refs));
  return snapshots.map((snapshot, i) => {
    const data = snapshot.data();
    return {
      key: keys[i]!,
      properties: data && fromDocument(data),
      version: new DocumentVersion(data ? snapshot.updateTime : undefined, data ? Object.keys(data) : []),
    };
  });
}

/** Writes each entity still at the version read, with its record and marker (see the file's comment). */
export async function replaceMany(firestore: Firestore, timeoutMs: number, ledgerKind: string, writes: readonly ConditionalWrite[]): Promise<ConditionalOutcome[]> {
  const outcomes: ConditionalOutcome[] = new Array(writes.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < writes.length) {
      const i = next++;
      outcomes[i] = await writeOne(firestore, timeoutMs, ledgerKind, writes[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, writes.length) }, worker));
  return outcomes;
}

async function writeOne(firestore: Firestore, timeoutMs: number, ledgerKind: string, write: ConditionalWrite): Promise<ConditionalOutcome> {
  let commit: (withMarker: boolean) => Promise<unknown>;
  try {
    const version = documentVersion(write.read.version, 'replaceMany');
    const ref = documentOf(firestore, write.read.key);
    const data = toDocument(firestore, write.properties);
    const recordRef = documentOf(firestore, ledgerKey(ledgerKind, write.record.key.namespace, write.record.id));
    const record = toDocument(firestore, ledgerProperties(write.record));
    const marker = write.marker && {
      ref: documentOf(firestore, write.marker.key),
      data: toDocument(firestore, write.marker.properties),
      version: write.marker.read && documentVersion(write.marker.read.version, 'replaceMany'),
    };
    commit = (withMarker) => {
      const batch = firestore.batch();
      batch.set(recordRef, record);
      addConditionalWrite(batch, ref, data, version);
      if (withMarker && marker) {
        if (marker.version) addConditionalWrite(batch, marker.ref, marker.data, marker.version);
        else batch.set(marker.ref, marker.data);
      }
      return withDeadline('batch write', timeoutMs, () => batch.commit());
    };
    if (!marker?.version) {
      await commit(true);
      return { outcome: 'written' };
    }
  } catch (error) {
    return failed(error);
  }
  try {
    await commit(true);
    return { outcome: 'written' };
  } catch (error) {
    if (!isConflict(error)) return failed(error);
  }
  try {
    await commit(false);
    return { outcome: 'written' };
  } catch (error) {
    return failed(error);
  }
}

function failed(error: unknown): ConditionalOutcome {
  if (isConflict(error)) return { outcome: 'conflict' };
  const mapped = error instanceof TypeError ? error : toStoreError('batch write', error);
  return { outcome: 'error', error: mapped };
}
