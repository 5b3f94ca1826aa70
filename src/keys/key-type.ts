/**
 * A store's own key type: how the keys its users hold (`K`) map to the Datastore `Key`s the
 * Locker's parts work on, and back. The Locker converts at its public boundary only (its methods'
 * keys, a handler's `ctx.key`, `ctx.fanOut()`'s and `ctx.fanIn()`'s children); everything inside,
 * the `X-Lock-Key` header's Go-compatible encoding included, stays on `Key`.
 *
 * `DatastoreStore` and `MemoryStore` have none: their keys are `Key`s. `FirestoreStore` has one
 * for `DocumentReference`s (`store/firestore/document-keys.ts`).
 */
import type { Key } from '@google-cloud/datastore';
import { keyPath } from './key-path';
import { parseKeyPath } from './key-path-parse';

/** How a store's keys (`K`) map to Datastore `Key`s and back. */
export interface KeyType<K> {
  /** The `Key` of `key`; a `TypeError` that names it when it is not one this store can hold. */
  toKey(key: K): Key;
  /** The store's own key for `key`. */
  fromKey(key: Key): K;
  /**
   * How the operator's view writes `key` (`inspect()`'s `keyPath`, the status page): `Order:42/Line:"a"`
   * for a Datastore key, the document's path (`Order/#42/Line/a`) for a `FirestoreStore`'s.
   */
  show(key: Key): string;
  /**
   * The keys `text` names, written as `show` writes them: for a text that does not say its namespace
   * (a Datastore key path), one in each of `namespaces` (`''` is the default one); none when `text`
   * names no key. Never throws.
   */
  parse(text: string, namespaces: readonly string[]): Key[];
}

/** A store that says what its keys are: the Locker built on it takes and hands out `K`s. */
export interface KeyedStore<K> {
  /** The store's key type; absent, the store's keys are Datastore `Key`s. */
  readonly keyType?: KeyType<K>;
}

/** A `Key` as it is. */
const asIs = (key: Key): Key => key;

/** The key type of a store that has none: `Key`s as they are, written as `keyPath` writes them. */
export const DATASTORE_KEYS: KeyType<Key> = Object.freeze({
  toKey: asIs,
  fromKey: asIs,
  show: keyPath,
  parse: (text: string, namespaces: readonly string[]): Key[] => {
    try {
      return namespaces.map((namespace) => parseKeyPath(text, namespace));
    } catch {
      return [];
    }
  },
});

/**
 * `keys`' way of writing and reading keys, on `Key`s as they are: what the status router works on
 * (its links and forms carry the `X-Lock-Key` encoding, which a `Key` and its document share) while
 * it shows each key as the store's users write it.
 */
export function shownAs<K>(keys: KeyType<K>): KeyType<Key> {
  if (isDatastoreKeys(keys)) return keys as KeyType<unknown> as KeyType<Key>;
  return { toKey: asIs, fromKey: asIs, show: (key) => keys.show(key), parse: (text, namespaces) => keys.parse(text, namespaces) };
}

/**
 * The key type of a Locker's store: its own, else {@link DATASTORE_KEYS}. The one place `K` meets
 * `Key`: `LockerOptions`'s `K` is inferred from the store's `keyType`, and is `Key` exactly when the
 * store has none.
 */
export function keyTypeOf<K>(store: KeyedStore<K>): KeyType<K> {
  return store.keyType ?? (DATASTORE_KEYS as KeyType<unknown> as KeyType<K>);
}

/** Whether keys of `keys` are `Key`s as they are: nothing to convert. */
export function isDatastoreKeys<K>(keys: KeyType<K>): boolean {
  return (keys.fromKey as unknown) === asIs;
}
