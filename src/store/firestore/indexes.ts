/**
 * The indexes `FirestoreStore`'s queries (`queries.ts`) need in a real Firestore database in
 * Native mode, as a `firestore.indexes.json` document (the file of `firebase deploy --only
 * firestore:indexes`) for the lockable kinds a user names:
 *
 * - `queryLocks`/`countLocks` (`locker.inspect()`, the status router, bulk operations): per kind,
 *   composite (`lock_state`, `lock_ts`) ascending and descending, and (`lock_state`, `lock_run`,
 *   `lock_ts`) ascending and descending for one run's steps: equalities in the order the query
 *   filters on them, then the order on `lock_ts` (its tie-break on the document id is implicit).
 *   Collection-group scope: the queries read a kind at every depth, kept to one namespace by
 *   ranges of document names (`kindInNamespace`, `kind-in-namespace.ts`);
 * - the search by chain id (`findKeys` on `lock_chain`, per kind): the single-field index of
 *   `lock_chain` in collection-group scope, an override that keeps the collection-scope one;
 * - the sweep's `listDue` on the ledger and fan-out's sweep (`findKeys` on the fan-out header's
 *   `due`, no namespace): collection-group queries over every namespace, which need the
 *   single-field index of `due` in collection-group scope, an override of the field's indexes. An
 *   override replaces the field's built-in indexes, so it keeps the collection-scope ascending one
 *   the same queries use when the store is pinned to `namespaces`.
 *
 * Every other query is served by Firestore's built-in single-field indexes (`listRecords`, `findKeys`
 * on a library record in one namespace). Type-only imports of `@google-cloud/firestore`: the command
 * `datastore-locker-indexes --firestore` must not load it (an optional peer).
 */
import { HEADER_KIND } from '../../fanout/records';
import { LEDGER_KIND } from '../ledger-entity';
import { isCollectionId } from './paths';

/** How an index orders a field. */
export type FirestoreIndexOrder = 'ASCENDING' | 'DESCENDING';

/** Which queries an index serves: those on one collection (at any path), or those on a collection group. */
export type FirestoreQueryScope = 'COLLECTION' | 'COLLECTION_GROUP';

/** One field of a composite index. */
export interface FirestoreIndexField {
  /** The field's name. */
  fieldPath: string;
  /** Its order in the index. */
  order: FirestoreIndexOrder;
}

/** A composite index, as `firestore.indexes.json` lists it. */
export interface FirestoreCompositeIndex {
  /** The collection id (the kind) it indexes. */
  collectionGroup: string;
  /** The queries it serves. */
  queryScope: FirestoreQueryScope;
  /** Its fields, in order. */
  fields: FirestoreIndexField[];
}

/** One single-field index of a field override. */
export interface FirestoreFieldIndex {
  /** The field's order. */
  order: FirestoreIndexOrder;
  /** The queries it serves. */
  queryScope: FirestoreQueryScope;
}

/** A field's single-field indexes, replacing the built-in ones, as `firestore.indexes.json` lists them. */
export interface FirestoreFieldOverride {
  /** The collection id the field belongs to. */
  collectionGroup: string;
  /** The field's name. */
  fieldPath: string;
  /** Every single-field index the field keeps (the built-in ones not listed are dropped). */
  indexes: FirestoreFieldIndex[];
}

/** A `firestore.indexes.json` document: what `firestoreIndexes()` returns. */
export interface FirestoreIndexes {
  /** The composite indexes. */
  indexes: FirestoreCompositeIndex[];
  /** The single-field index overrides. */
  fieldOverrides: FirestoreFieldOverride[];
}

/** The equality fields before `lock_ts` in each composite index, in the order `queries.ts` filters on them: a state's steps, and a run's. */
const LOCK_PREFIXES: ReadonlyArray<readonly string[]> = [['lock_state'], ['lock_state', 'lock_run']];

/** The library's collections read by collection-group queries on `due`: the ledger (`listDue`) and the fan-out header (fan-out's sweep). */
const DUE_COLLECTIONS: readonly string[] = [LEDGER_KIND, HEADER_KIND];

/**
 * The `firestore.indexes.json` document `FirestoreStore` needs for your lockable kinds: for each,
 * four composite indexes in collection-group scope (`lock_state` then `lock_ts`, ascending and
 * descending; the same with `lock_run` between them) and the collection-group index of
 * `lock_chain`; and the collection-group index of `due` on the library's ledger
 * (`LockerOutbox`) and fan-out (`LockerFanOut`) collections. Deploy it with
 * `firebase deploy --only firestore:indexes` (merge it into your own file first). Also a command:
 * `npx datastore-locker-indexes --firestore Order Invoice > firestore.indexes.json`.
 * Throws a `TypeError` when no kind is given or a kind cannot be a Firestore collection id (empty,
 * with a `/`, reserved `__…__`, over 1,500 bytes).
 */
export function firestoreIndexes(kinds: readonly string[]): FirestoreIndexes {
  if (!Array.isArray(kinds) || kinds.length === 0) throw new TypeError('firestoreIndexes: name at least one kind');
  for (const kind of kinds) {
    if (typeof kind !== 'string' || !isCollectionId(kind)) {
      throw new TypeError(`firestoreIndexes: ${JSON.stringify(kind)} cannot be a Firestore collection id (not empty, no "/", not "__…__", at most 1,500 bytes)`);
    }
  }
  const indexes: FirestoreCompositeIndex[] = [];
  for (const kind of new Set(kinds)) {
    for (const prefix of LOCK_PREFIXES) {
      for (const last of ['ASCENDING', 'DESCENDING'] as const) {
        indexes.push({
          collectionGroup: kind,
          queryScope: 'COLLECTION_GROUP',
          fields: [...prefix.map((fieldPath): FirestoreIndexField => ({ fieldPath, order: 'ASCENDING' })), { fieldPath: 'lock_ts', order: last }],
        });
      }
    }
  }
  const groupToo = (collectionGroup: string, fieldPath: string): FirestoreFieldOverride => ({
    collectionGroup,
    fieldPath,
    indexes: [{ order: 'ASCENDING', queryScope: 'COLLECTION' }, { order: 'ASCENDING', queryScope: 'COLLECTION_GROUP' }],
  });
  const fieldOverrides = [...[...new Set(kinds)].map((kind) => groupToo(kind, 'lock_chain')), ...DUE_COLLECTIONS.map((kind) => groupToo(kind, 'due'))];
  return { indexes, fieldOverrides };
}
