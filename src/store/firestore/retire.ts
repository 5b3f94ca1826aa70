/**
 * `retireLedgerMany`: the grouped removals of finished steps' ledger records. A record named with
 * its version is deleted with a `lastUpdateTime` precondition at that version, nothing read (one
 * written again since is at a new `updateTime` and stays). The others are read with their entities
 * in one `getAll`, judged by `needed` on the entity as stored, and deleted at the version read.
 * A refused precondition is a record kept, no error. One delete is a `Commit` of its own; several
 * go out together through a `BulkWriter` without throttling (its `BatchWrite` applies each write
 * on its own, up to 20 a call): the removals grouped under load cost one RPC per 20 records
 * instead of one each, as `DatastoreStore`'s one commit of deletes does. A failed delete is not
 * tried again by the writer (the sweep removes what is left).
 */
import type { Firestore, DocumentReference, Timestamp } from '@google-cloud/firestore';
import type { LedgerNeeded, LedgerRef } from '../../types';
import { ledgerKey } from '../ledger-entity';
import { withDeadline } from './deadline';
import { call, isConflict, toStoreError } from './errors';
import { documentOf } from './paths';
import { fromDocument } from './values';
import { documentVersion } from './version';

/** Removes the records named that are still at their version, or that their entities no longer need. */
export async function retireLedgerMany(firestore: Firestore, timeoutMs: number, ledgerKind: string, records: readonly LedgerRef[], needed: LedgerNeeded): Promise<void> {
  if (records.length > 500) throw new RangeError('retireLedgerMany removes at most 500 records a call');
  const deletes = new Map<string, { ref: DocumentReference; at: Timestamp }>();
  const judged: { ref: DocumentReference; entity: DocumentReference; id: string }[] = [];
  for (const { key, id, version } of records) {
    const ref = documentOf(firestore, ledgerKey(ledgerKind, key.namespace, id));
    if (version === undefined) {
      judged.push({ ref, entity: documentOf(firestore, key), id });
      continue;
    }
    const at = documentVersion(version, 'retireLedgerMany').updateTime;
    if (at) deletes.set(ref.path, { ref, at });
  }
  if (judged.length > 0) {
    const snapshots = await call('lookup', timeoutMs, () => firestore.getAll(...judged.flatMap((j) => [j.ref, j.entity])));
    judged.forEach(({ ref, id }, i) => {
      const record = snapshots[2 * i]!;
      const entity = snapshots[2 * i + 1]!.data();
      if (!record.exists || deletes.has(ref.path)) return;
      if (!needed(entity && fromDocument(entity), id)) deletes.set(ref.path, { ref, at: record.updateTime! });
    });
  }
  const results = await deleteAll(firestore, timeoutMs, [...deletes.values()]);
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected' && !isConflict(r.reason));
  if (failure) throw toStoreError('delete', failure.reason);
}

/** Deletes each document at its `updateTime`: one `Commit` for one, a `BulkWriter`'s `BatchWrite`s for several. */
async function deleteAll(firestore: Firestore, timeoutMs: number, deletes: readonly { ref: DocumentReference; at: Timestamp }[]): Promise<PromiseSettledResult<unknown>[]> {
  if (deletes.length <= 1) return Promise.allSettled(deletes.map(({ ref, at }) => withDeadline('delete', timeoutMs, () => ref.delete({ lastUpdateTime: at }))));
  const writer = firestore.bulkWriter({ throttling: false });
  writer.onWriteError(() => false);
  const writes = deletes.map(({ ref, at }) => writer.delete(ref, { lastUpdateTime: at }));
  const settled = Promise.allSettled(writes);
  try {
    await withDeadline('delete', timeoutMs, () => writer.close());
  } catch (error) {
    return deletes.map(() => ({ status: 'rejected', reason: error }));
  }
  return settled;
}
