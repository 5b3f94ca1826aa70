/**
 * Datastore keys as Firestore document paths (Native mode), both ways. Keys stay `Key` objects at
 * the store's port; only `FirestoreStore` sees documents.
 *
 * - A kind is a collection id, a name or a numeric id a document id: `Order:42/Line:"a"` is the
 *   document `Order/#42/Line/a`. Ancestors are nested subcollections.
 * - A numeric id is the document id `#` followed by its digits. A name is its own document id,
 *   except a name that starts with `#` or that Firestore reserves (`.`, `..`, `__…__`), which gets
 *   a `#` in front: `#` then digits is always an id, `#` then anything else always a name, so an id
 *   and a name never meet (`Order:1` and `Order:"1"` are two documents, `1` and `#1`).
 * - Native mode has no namespaces: the namespace `ns` is the document `LockerNamespaces/ns` (its
 *   id escaped the same way), and its kinds are that document's subcollections; the default
 *   namespace's kinds are root collections. The document `LockerNamespaces/ns` itself is never
 *   written. A root kind named `LockerNamespaces` in the default namespace is therefore refused.
 * - Refused, with a `StoreRejectedError` that says why: a kind or a name with a `/`, a kind
 *   Firestore reserves (`__…__`), an id or name longer than 1,500 bytes. A key with neither id nor
 *   name is a `TypeError`, as in every store.
 */
import { Datastore, Key } from '@google-cloud/datastore';
import type { CollectionReference, DocumentReference, Firestore } from '@google-cloud/firestore';
import { StoreRejectedError } from '../../errors/errors';
import { ancestry, checkComplete, keyPath } from '../../keys/key-path';

/** The root collection whose documents stand for namespaces (never written themselves). */
export const NAMESPACES_COLLECTION = 'LockerNamespaces';

/** Firestore's longest document id, in UTF-8 bytes. */
const MAX_ID_BYTES = 1_500;
const RESERVED = /^__.*__$/;
const DIGITS = /^-?[0-9]+$/;

/** The document id of a name: itself, or `#` and itself when it starts with `#` or is reserved. */
function nameId(name: string, key: () => Key): string {
  if (name.includes('/')) throw unmappable(key, `the name ${JSON.stringify(name)} has a "/", which Firestore document ids cannot hold`);
  const id = name.startsWith('#') || name === '.' || name === '..' || RESERVED.test(name) ? `#${name}` : name;
  if (Buffer.byteLength(id) > MAX_ID_BYTES) throw unmappable(key, `a name longer than ${MAX_ID_BYTES} bytes`);
  return id;
}

/** Whether a kind can be a Firestore collection id: not empty, no `/`, not `__…__`, at most 1,500 bytes. */
export function isCollectionId(kind: string): boolean {
  return kind !== '' && !kind.includes('/') && !RESERVED.test(kind) && Buffer.byteLength(kind) <= MAX_ID_BYTES;
}

function checkKind(kind: string, key: () => Key): void {
  if (!isCollectionId(kind)) {
    throw unmappable(key, `the kind ${JSON.stringify(kind)} cannot be a Firestore collection id (no "/", not "__…__", at most ${MAX_ID_BYTES} bytes)`);
  }
}

/** The error for a key Firestore cannot hold; the key is made only then (`key`), not on every mapping. */
function unmappable(key: () => Key, why: string): StoreRejectedError {
  return new StoreRejectedError(`the key ${keyPath(key())} has no Firestore document path: ${why}`);
}

/** Where a namespace's collections hang: the database's root, or the namespace's document. */
export function namespaceParent(firestore: Firestore, namespace: string | undefined): Firestore | DocumentReference {
  return namespace ? namespaceDocument(firestore, namespace) : firestore;
}

/** The document `LockerNamespaces/<ns>` that stands for a namespace other than the default one (never written itself). */
export function namespaceDocument(firestore: Firestore, namespace: string): DocumentReference {
  return firestore.collection(NAMESPACES_COLLECTION).doc(nameId(namespace, () => new Key({ namespace, path: ['Namespace', namespace] })));
}

/** The top-level collection of `kind` in `namespace`. */
export function kindCollection(firestore: Firestore, namespace: string | undefined, kind: string): CollectionReference {
  checkKind(kind, () => new Key({ ...(namespace ? { namespace } : {}), path: [kind, 'any'] }));
  if (!namespace && kind === NAMESPACES_COLLECTION) {
    throw new StoreRejectedError(`the kind ${NAMESPACES_COLLECTION} is reserved in the default namespace: FirestoreStore keeps namespaces there`);
  }
  return namespaceParent(firestore, namespace).collection(kind);
}

/** The document a complete key names. A `TypeError` for an incomplete key, a `StoreRejectedError` for one Firestore cannot hold. */
export function documentOf(firestore: Firestore, key: Key): DocumentReference {
  checkComplete(key); // a TypeError for an incomplete key
  const [root, ...rest] = ancestry(key);
  let doc = kindCollection(firestore, key.namespace, root!.kind).doc(elementId(root!, key));
  for (const k of rest) {
    checkKind(k.kind, () => key);
    doc = doc.collection(k.kind).doc(elementId(k, key));
  }
  return doc;
}

function elementId(k: Key, whole: Key): string {
  if (k.name !== undefined && k.name !== '') return nameId(k.name, () => whole);
  return `#${String(k.id)}`;
}

/**
 * The key of a document this store wrote (a path `documentOf` makes); undefined for a path it
 * never makes (a namespace's own document, an odd number of segments).
 */
export function keyOf(ref: DocumentReference): Key | undefined {
  let segments = ref.path.split('/');
  let namespace: string | undefined;
  if (segments[0] === NAMESPACES_COLLECTION) {
    if (segments.length < 4) return undefined;
    namespace = decodeId(segments[1]!).name;
    if (namespace === undefined) return undefined;
    segments = segments.slice(2);
  }
  if (segments.length % 2 !== 0) return undefined;
  const path: (string | ReturnType<typeof Datastore.int>)[] = [];
  for (let i = 0; i < segments.length; i += 2) {
    const { name, id } = decodeId(segments[i + 1]!);
    path.push(segments[i]!, name ?? Datastore.int(id!));
  }
  return new Key(namespace ? { namespace, path } : { path });
}

/** The name or the numeric id a document id stands for. */
function decodeId(id: string): { name?: string; id?: string } {
  if (!id.startsWith('#')) return { name: id };
  const rest = id.slice(1);
  return DIGITS.test(rest) ? { id: rest } : { name: rest };
}

/** The namespace a document of this store lives in ('' for the default one). */
export function namespaceOf(ref: DocumentReference): string {
  const segments = ref.path.split('/');
  if (segments[0] !== NAMESPACES_COLLECTION || segments.length < 4) return '';
  return decodeId(segments[1]!).name ?? '';
}

/** True for a document directly in a top-level collection of a namespace (no ancestor). */
export function isTopLevel(ref: DocumentReference): boolean {
  const depth = ref.path.split('/').length;
  return ref.path.startsWith(`${NAMESPACES_COLLECTION}/`) ? depth === 4 : depth === 2;
}

/** Whether a document this store wrote lives in `namespace` ('' or undefined: the default one). */
export function inNamespace(ref: DocumentReference, namespace: string | undefined): boolean {
  return namespaceOf(ref) === (namespace ?? '');
}
