/**
 * The store's queries on Firestore (Native mode): the sweep's due ledger records, the operator's
 * lock pages, counts and record lists, and fan-out's key lookups. Two kinds of kind:
 * - **The user's lockable kinds** (`queryLocks`, `countLocks`, `findKeys` on a lock field such as
 *   the search's `lock_chain`): every document of the kind in the namespace, at any depth, as a
 *   Datastore kind query lists entities below an ancestor too (`Order/o-1/Line/l-1` is a `Line`).
 *   That is the kind's collection group kept to the namespace by ranges of document names
 *   (`kindInNamespace`, `kind-in-namespace.ts`).
 * - **The library's own records** (the ledger, the fan-out header, the schedules, the record lists):
 *   the library writes them only at the top level of their collections, so these queries read the
 *   kind's top-level collection. Queries that span every namespace (the sweep, fan-out's
 *   `findKeys` without a namespace) are collection-group queries kept to top-level documents,
 *   unless the store is pinned to `namespaces`.
 *
 * The indexes they need in a real database (the emulator needs none), which `firestoreIndexes(kinds)`
 * (`indexes.ts`) returns as a `firestore.indexes.json` document and
 * `npx datastore-locker-indexes --firestore KIND...` prints:
 * - `LockerOutbox.due` (`listDue`) and the fan-out header's `due` (`findKeys`): the single-field
 *   index Firestore builds, enabled for **collection group** scope too (an index exemption, which
 *   replaces the field's built-in indexes, so it lists the collection-scope one again:
 *   `gcloud firestore indexes fields update due --collection-group=LockerOutbox --index=order=ascending,query-scope=collection --index=order=ascending,query-scope=collection-group`);
 * - `queryLocks`/`countLocks`, per lockable kind: composite (`lock_state` ascending, `lock_ts`
 *   ascending) and (`lock_state` ascending, `lock_ts` descending) in collection-group scope; with
 *   a run, the same with `lock_run` ascending between them;
 * - `findKeys` on a lockable kind's `lock_chain` (the search by chain id): its single-field index
 *   enabled for collection-group scope (an override, as for `due`);
 * - `listRecords`: the built-in single-field index of its time property (descending);
 * - `findKeys` on a library record by one property equal to a string: the built-in single-field index.
 */
import type { Key } from '@google-cloud/datastore';
import { FieldPath, Timestamp, type DocumentData, type DocumentReference, type Firestore, type Query, type QueryDocumentSnapshot } from '@google-cloud/firestore';
import { LOCK_FIELD_PREFIX, type DueLedger, type KeyQuery, type LockCount, type LockCountQuery, type LockPage, type LockQuery, type RecordQuery } from '../../types';
import { dueFirst, readLedger } from '../ledger-entity';
import { checkLockCount, checkLockQuery } from '../lock-query';
import { checkRecordQuery } from '../record-query';
import { checkKeyQuery } from '../key-query';
import { call } from './errors';
import { kindInNamespace } from './kind-in-namespace';
import { inNamespace, isTopLevel, keyOf, kindCollection, namespaceOf } from './paths';
import { fromDocument } from './values';

/** The most malformed records one namespace's query reads past before it stops looking for well-formed ones. */
const MAX_MALFORMED = 10_000;

/** Where a query over "every namespace" looks: the namespaces the store is pinned to, or all (a collection group). */
export type Scope = readonly string[] | 'all';

/** The ledger records due at `now` in `scope`, oldest due first, at most `limit` (`Store.listDue`). */
export async function listDue(firestore: Firestore, timeoutMs: number, kind: string, scope: Scope, now: Date, limit: number): Promise<DueLedger> {
  const queries = scope === 'all' ? [firestore.collectionGroup(kind)] : scope.map((ns) => kindCollection(firestore, ns, kind));
  const found: DueLedger = { records: [], malformed: [] };
  const parts = await Promise.all(queries.map((q) => dueIn(q, timeoutMs, now, limit)));
  for (const part of parts) {
    found.records.push(...part.records);
    found.malformed.push(...part.malformed);
  }
  found.records = found.records.sort(dueFirst).slice(0, Math.max(0, limit));
  return found;
}

async function dueIn(base: Query, timeoutMs: number, now: Date, limit: number): Promise<DueLedger> {
  const found: DueLedger = { records: [], malformed: [] };
  if (limit <= 0) return found;
  const query = base.where('due', '<=', Timestamp.fromDate(now)).orderBy('due');
  let after: QueryDocumentSnapshot | undefined;
  while (found.records.length < limit && found.malformed.length < MAX_MALFORMED) {
    const asked = limit - found.records.length;
    const page = await call('ledger query', timeoutMs, () => (after ? query.startAfter(after) : query).limit(asked).get());
    for (const doc of page.docs) {
      if (!isTopLevel(doc.ref)) continue; // the kind's name used below an ancestor: not a ledger record
      const record = readLedger(keyOf(doc.ref)?.name ?? doc.id, fromDocument(doc.data()));
      if ('malformed' in record) found.malformed.push(`${namespaceOf(doc.ref)}:${doc.id}: ${record.malformed}`);
      else if (found.records.length < limit) found.records.push(record);
    }
    if (page.docs.length < asked) break;
    after = page.docs[page.docs.length - 1];
  }
  return found;
}

/** One page of locks by state, ordered by `lock_ts` (`Store.queryLocks`). */
export async function queryLocks(firestore: Firestore, timeoutMs: number, query: LockQuery): Promise<LockPage> {
  checkLockQuery(query);
  const direction = query.order === 'desc' ? 'desc' : 'asc';
  let q = lockFilter(firestore, query).orderBy('lock_ts', direction).orderBy(FieldPath.documentId(), direction);
  if (query.cursor !== undefined) {
    const [ms, doc] = readCursor(firestore, query.cursor, (ref) => ref.parent.id === query.kind && inNamespace(ref, query.namespace));
    q = q.startAfter(Timestamp.fromMillis(ms), doc);
  }
  const docs = (await call('lock query', timeoutMs, () => q.limit(query.limit + 1).get())).docs;
  return pageOf(docs, query.limit, (doc) => timeOf(doc.get('lock_ts')));
}

/** How many locks match, up to the cap (`Store.countLocks`): one count aggregation. */
export async function countLocks(firestore: Firestore, timeoutMs: number, query: LockCountQuery): Promise<LockCount> {
  checkLockCount(query);
  const counted = await call('lock count', timeoutMs, () => lockFilter(firestore, query).limit(query.cap + 1).count().get());
  const n = Number(counted.data().count); // a bigint on a client built with useBigInt
  return n > query.cap ? { count: query.cap, exact: false } : { count: n, exact: true };
}

function lockFilter(firestore: Firestore, query: Omit<LockCountQuery, 'cap'>): Query {
  let q: Query = kindInNamespace(firestore, query.namespace, query.kind).where('lock_state', '==', query.state);
  if (query.run !== undefined) q = q.where('lock_run', '==', query.run);
  if (query.tsFrom !== undefined) q = q.where('lock_ts', '>=', Timestamp.fromDate(query.tsFrom));
  if (query.tsBefore !== undefined) q = q.where('lock_ts', '<', Timestamp.fromDate(query.tsBefore));
  return q;
}

/** Records of one kind, newest first by a time property (`Store.listRecords`). */
export async function listRecords(firestore: Firestore, timeoutMs: number, query: RecordQuery): Promise<LockPage> {
  checkRecordQuery(query);
  const collection = kindCollection(firestore, query.namespace, query.kind);
  let q = collection.orderBy(query.newestBy, 'desc').orderBy(FieldPath.documentId(), 'desc');
  if (query.cursor !== undefined) {
    const [ms, doc] = readCursor(firestore, query.cursor, (ref) => ref.parent.path === collection.path);
    q = q.startAfter(Timestamp.fromMillis(ms), doc);
  }
  const docs = (await call('record query', timeoutMs, () => q.limit(query.limit + 1).get())).docs;
  return pageOf(docs.filter((doc) => doc.get(query.newestBy) instanceof Timestamp), query.limit, (doc) => timeOf(doc.get(query.newestBy)));
}

/**
 * Keys of the entities one property matches (`Store.findKeys`): keys-only queries. On a lock field
 * the kind is a lockable one, read at every depth; on another, a library record's top-level collection.
 */
export async function findKeys(firestore: Firestore, timeoutMs: number, query: KeyQuery, scope: Scope): Promise<Key[]> {
  checkKeyQuery(query);
  const lockable = query.property.startsWith(LOCK_FIELD_PREFIX);
  const inOne = (ns: string | undefined): Query => (lockable ? kindInNamespace : kindCollection)(firestore, ns, query.kind);
  const bases: Query[] = query.namespace !== undefined
    ? [inOne(query.namespace)]
    : scope === 'all' ? [firestore.collectionGroup(query.kind)] : scope.map(inOne);
  const keys: Key[] = [];
  for (const base of bases) {
    const filtered = query.equals !== undefined
      ? base.where(query.property, '==', query.equals)
      : base.where(query.property, '<=', Timestamp.fromDate(query.atOrBefore!));
    const docs = (await call('key query', timeoutMs, () => filtered.select().limit(query.limit).get())).docs;
    for (const doc of docs) {
      const key = lockable || isTopLevel(doc.ref) ? keyOf(doc.ref) : undefined;
      if (key && keys.length < query.limit) keys.push(key);
    }
  }
  return keys;
}

/** The first `limit` documents as a page, with a cursor when one more was found behind them. */
function pageOf(docs: QueryDocumentSnapshot[], limit: number, at: (doc: QueryDocumentSnapshot) => number): LockPage {
  const page = docs.slice(0, limit);
  const out: LockPage = { entities: page.flatMap((doc) => entityOf(doc.ref, doc.data())) };
  const last = page.at(-1);
  if (last && docs.length > limit) out.cursor = Buffer.from(JSON.stringify([at(last), last.ref.path])).toString('base64url');
  return out;
}

function entityOf(ref: DocumentReference, data: DocumentData): LockPage['entities'] {
  const key = keyOf(ref);
  return key ? [{ key, properties: fromDocument(data) }] : [];
}

function timeOf(value: unknown): number {
  return value instanceof Timestamp ? value.toMillis() : 0;
}

/** A cursor's time and document (its path), when it is one this store handed out for a query whose documents pass `fits`. */
function readCursor(firestore: Firestore, cursor: string, fits: (ref: DocumentReference) => boolean): [number, DocumentReference] {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString());
    if (Array.isArray(value) && typeof value[0] === 'number' && typeof value[1] === 'string') {
      const ref = firestore.doc(value[1]);
      if (keyOf(ref) && fits(ref)) return [value[0], ref];
    }
  } catch {
    // fall through
  }
  throw new RangeError('the cursor is not one this store handed out');
}
