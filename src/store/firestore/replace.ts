/**
 * Compare-and-swap on one document, as one write with no transaction: `update()` with a
 * `lastUpdateTime` precondition at the version read (every field of the new properties set, every
 * field of the version read that they leave out deleted, so the document ends up exactly the new
 * properties), or `create()` for a document read absent. The server refuses the write when the
 * document changed, went or appeared since (FAILED_PRECONDITION, NOT_FOUND, ALREADY_EXISTS:
 * `isConflict`). A write that changes nothing keeps the document's `updateTime`, so its old
 * snapshot stays good: the version is the content's, which the Locker's writes always change.
 */
import { FieldPath, FieldValue, type DocumentData, type DocumentReference, type WriteBatch } from '@google-cloud/firestore';
import type { DocumentVersion } from './version';

/** The field-value pairs of an update that turns the document read at `version` into exactly `data`. */
export function replacement(data: DocumentData, version: DocumentVersion): [FieldPath, unknown, ...unknown[]] {
  const pairs: unknown[] = [];
  for (const [name, value] of Object.entries(data)) pairs.push(new FieldPath(name), value);
  for (const name of version.fields) {
    if (!Object.prototype.hasOwnProperty.call(data, name)) pairs.push(new FieldPath(name), FieldValue.delete());
  }
  // An update names at least one field: deleting one the document does not have changes nothing.
  if (pairs.length === 0) pairs.push(new FieldPath('lock_ts'), FieldValue.delete());
  return pairs as [FieldPath, unknown, ...unknown[]];
}

/** Adds to `batch` the conditional write of `data` over the document read at `version` (absent: a create). */
export function addConditionalWrite(batch: WriteBatch, ref: DocumentReference, data: DocumentData, version: DocumentVersion): void {
  if (version.updateTime === undefined) {
    batch.create(ref, data);
    return;
  }
  const [field, value, ...rest] = replacement(data, version);
  batch.update(ref, field, value, ...rest, { lastUpdateTime: version.updateTime });
}
