/**
 * Helpers for `@google-cloud/datastore` `Key` objects that every store shares: a stable identity
 * (namespace and full ancestor path, from `key-path.ts`) and a copy that callers cannot mutate.
 */
import { Datastore, Key } from '@google-cloud/datastore';
import { ancestry, keyIdentity } from './key-path';

/**
 * A stable string for a complete key, equal for equal keys (an id of `1` and `'1'` are one id; an
 * id and a name never collide). Throws a `TypeError` when the key or an ancestor has neither an id
 * nor a name.
 */
export const keyString = keyIdentity;

/** A copy of a key with the same namespace, kinds, ids and names. */
export function copyKey(key: Key): Key {
  const path = ancestry(key).flatMap((k) => {
    const idOrName = k.name ?? idOf(k);
    return idOrName === undefined ? [k.kind] : [k.kind, idOrName];
  });
  return new Key(key.namespace ? { namespace: key.namespace, path } : { path });
}

/** A key's id as a path element: a number stays a number; a string id becomes an `Int`. */
function idOf(key: Key): number | ReturnType<typeof Datastore.int> | undefined {
  if (key.id === undefined) return undefined;
  return typeof key.id === 'number' ? key.id : Datastore.int(key.id);
}
