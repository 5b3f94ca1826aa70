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

/** How a store's keys (`K`) map to Datastore `Key`s and back. */
export interface KeyType<K> {
  /** The `Key` of `key`; a `TypeError` that names it when it is not one this store can hold. */
  toKey(key: K): Key;
  /** The store's own key for `key`. */
  fromKey(key: Key): K;
}

/** A store that says what its keys are: the Locker built on it takes and hands out `K`s. */
export interface KeyedStore<K> {
  /** The store's key type; absent, the store's keys are Datastore `Key`s. */
  readonly keyType?: KeyType<K>;
}

/** The key type of a store that has none: `Key`s as they are. */
export const DATASTORE_KEYS: KeyType<Key> = Object.freeze({
  toKey: (key: Key) => key,
  fromKey: (key: Key) => key,
});

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
  return keys === (DATASTORE_KEYS as KeyType<unknown>);
}
