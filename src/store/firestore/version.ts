/**
 * The version a `FirestoreStore` read hands out (`Snapshot.version`, `VersionedRead.version`,
 * `StepRead.recordVersion`): the document's `updateTime`, which a conditional write compares as
 * its `lastUpdateTime` precondition, and the names of its fields, which a replace deletes when the
 * new properties leave them out (`update()` changes only the fields it names).
 */
import type { Timestamp } from '@google-cloud/firestore';

/** A document as read: at `updateTime`, with these top-level fields; absent when `updateTime` is undefined. */
export class DocumentVersion {
  constructor(
    /** When the document was last written; undefined when it did not exist. */
    readonly updateTime: Timestamp | undefined,
    /** Its top-level field names. */
    readonly fields: readonly string[],
  ) {}
}

/** The version of a read a FirestoreStore made; a `TypeError` for any other. */
export function documentVersion(version: unknown, operation: string): DocumentVersion {
  if (version instanceof DocumentVersion) return version;
  throw new TypeError(`${operation} needs a version that a FirestoreStore read or wrote`);
}
