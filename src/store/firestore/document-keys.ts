/**
 * `FirestoreStore`'s key type: the Locker built on it takes and hands out `DocumentReference`s,
 * which the store maps to and from the Datastore `Key`s of its port (`paths.ts`). A document in a
 * subcollection (`Order/o-1/Line/l-1`) is a key with an ancestor; a document under
 * `LockerNamespaces/<ns>/` a key in namespace `ns`.
 *
 * Refused with a `TypeError` that names what was given: anything but a `DocumentReference`, one
 * of another Firestore client than the store's (another database, or another client of the same
 * one: the store cannot tell them apart, and its writes go through its own), and a document whose
 * path the store never makes (`paths.ts`: an id Firestore gives such as `#x`, `LockerNamespaces/ns`
 * itself).
 */
import type { Key } from '@google-cloud/datastore';
import type { DocumentReference, Firestore } from '@google-cloud/firestore';
import type { KeyType } from '../../keys/key-type';
import { keyPath } from '../../keys/key-path';
import { documentOf, keyOf } from './paths';

/** The longest text `parse` reads as a document path. */
const MAX_PATH_LENGTH = 6_000;

/** The key type of a `FirestoreStore` on `firestore`. */
export function documentKeys(firestore: Firestore): KeyType<DocumentReference> {
  return {
    toKey: (ref) => keyOfDocument(firestore, ref),
    fromKey: (key) => documentOf(firestore, key),
    show: (key) => showDocument(firestore, key),
    parse: (text) => parseDocument(firestore, text),
  };
}

/** The document's path (`Order/#42/Line/a`); the key path for a key no document stands for (never one the store wrote). */
function showDocument(firestore: Firestore, key: Key): string {
  try {
    return documentOf(firestore, key).path;
  } catch {
    return keyPath(key);
  }
}

/** The key of the document at the path `text` (a leading `/` allowed): the path says its namespace. None when it names no document of this store. */
function parseDocument(firestore: Firestore, text: string): Key[] {
  const path = text.trim().replace(/^\/+/, '');
  if (path === '' || path.length > MAX_PATH_LENGTH) return [];
  try {
    return [keyOfDocument(firestore, firestore.doc(path))];
  } catch {
    return [];
  }
}

function keyOfDocument(firestore: Firestore, ref: unknown): Key {
  if (!isDocumentReference(ref)) {
    throw new TypeError(`a FirestoreStore's Locker takes a DocumentReference (firestore.doc('Order/o-1')); got ${describe(ref)}`);
  }
  if (ref.firestore !== firestore) {
    throw new TypeError(`the DocumentReference ${ref.path} is of another Firestore client than the store's (database ${databaseOf(ref.firestore)}): make it with the client the FirestoreStore was built on`);
  }
  const key = keyOf(ref);
  // A path the store would name otherwise (an id such as `#x`, the escape of the name `x`) is not the
  // user's document: the round trip sees it.
  if (key === undefined || documentOf(firestore, key).path !== ref.path) {
    throw new TypeError(`the document ${ref.path} has no key in a FirestoreStore: its ids cannot start with "#" unless "#" and digits, and a LockerNamespaces document is not a user's`);
  }
  return key;
}

function isDocumentReference(value: unknown): value is DocumentReference {
  if (value === null || typeof value !== 'object') return false;
  const ref = value as Partial<DocumentReference>;
  return typeof ref.path === 'string' && typeof ref.id === 'string' && typeof ref.collection === 'function' && ref.firestore !== undefined;
}

function databaseOf(firestore: Firestore): string {
  try {
    return firestore.databaseId;
  } catch {
    return 'unknown';
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value === 'string' ? `the string ${JSON.stringify(value)}` : typeof value;
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== 'Object' ? `a ${name}` : 'an object';
}
