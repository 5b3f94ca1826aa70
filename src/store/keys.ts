/**
 * Helpers for `@google-cloud/datastore` `Key` objects that every store shares: a stable text form
 * (namespace and full ancestor path) and a copy that callers cannot mutate.
 */
import { Datastore, Key } from '@google-cloud/datastore';

/** One element of a key's path, as the text form writes it: a kind with an id or a name. */
type PathElement = [kind: string, idOrName: { id: string } | { name: string }];

/**
 * A stable string for a complete key, equal for equal keys (an id of `1` and `'1'` are one id; an
 * id and a name never collide). Throws a `TypeError` when the key or an ancestor has neither an id
 * nor a name.
 */
export function keyString(key: Key): string {
  return JSON.stringify([key.namespace ?? '', pathElements(key)]);
}

/** A copy of a key with the same namespace, kinds, ids and names. */
export function copyKey(key: Key): Key {
  const path = chain(key).flatMap((k) => {
    const idOrName = k.name ?? idOf(k);
    return idOrName === undefined ? [k.kind] : [k.kind, idOrName];
  });
  return new Key(key.namespace ? { namespace: key.namespace, path } : { path });
}

/** A short readable form of a key for messages, e.g. `ns:Order:42/Line:"a"`. */
export function describeKey(key: Key): string {
  const path = chain(key)
    .map((k) => `${k.kind}:${k.name !== undefined ? JSON.stringify(k.name) : (k.id ?? '?')}`)
    .join('/');
  return key.namespace ? `${key.namespace}:${path}` : path;
}

function pathElements(key: Key): PathElement[] {
  return chain(key).map((k) => {
    if (k.name !== undefined && k.name !== '') return [k.kind, { name: k.name }];
    if (k.id !== undefined && String(k.id) !== '') return [k.kind, { id: String(k.id) }];
    throw new TypeError(
      `the key ${k.kind} in ${describeKey(key)} has neither an id nor a name: stores need complete keys`,
    );
  });
}

/** The key's ancestors and itself, root first. */
function chain(key: Key): Key[] {
  const keys: Key[] = [];
  for (let k: Key | undefined = key; k; k = k.parent) keys.unshift(k);
  return keys;
}

/** A key's id as a path element: a number stays a number; a string id becomes an `Int`. */
function idOf(key: Key): number | ReturnType<typeof Datastore.int> | undefined {
  if (key.id === undefined) return undefined;
  return typeof key.id === 'number' ? key.id : Datastore.int(key.id);
}
