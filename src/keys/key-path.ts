/**
 * A key as text: the one way this library writes a key for people, logs, messages and as an
 * identity in maps. `Order:42/Line:"a"`: each element's kind, then its numeric id or its
 * JSON-quoted name. A kind with anything but letters, digits, `_`, `.` and `-` is JSON-quoted too,
 * so two different complete keys never read the same; an element with neither id nor name reads
 * `Kind:?`.
 */
import type { Key } from '@google-cloud/datastore';

/** The key's path for people and logs, in its namespace: `Parent:1/Child:"name"`. */
export function keyPath(key: Key): string {
  // Built leaf to root without an array: keys are turned into text several times per step.
  let path = element(key);
  for (let k = key.parent; k; k = k.parent) path = `${element(k)}/${path}`;
  return path;
}

/**
 * A stable identity for a complete key, namespace included: equal for equal keys (an id of `1`
 * and `'1'` are one id; an id and a name never collide). Throws a `TypeError` when the key or an
 * ancestor has neither an id nor a name.
 */
export function keyIdentity(key: Key): string {
  checkComplete(key);
  return `${key.namespace ?? ''}\u0000${keyPath(key)}`;
}

/** Throws `keyIdentity`'s `TypeError` when the key or an ancestor has neither an id nor a name; makes no text otherwise. */
export function checkComplete(key: Key): void {
  for (let k: Key | undefined = key; k; k = k.parent) {
    if ((k.name === undefined || k.name === '') && (k.id === undefined || String(k.id) === '')) {
      throw new TypeError(`the key ${k.kind} in ${keyPath(key)} has neither an id nor a name: stores need complete keys`);
    }
  }
}

/** The key and its ancestors, root first. */
export function ancestry(key: Key): Key[] {
  const chain: Key[] = [];
  for (let k: Key | undefined = key; k; k = k.parent) chain.unshift(k);
  return chain;
}

const PLAIN_KIND = /^[A-Za-z0-9_.-]+$/;

function element(k: Key): string {
  const kind = PLAIN_KIND.test(k.kind) ? k.kind : JSON.stringify(k.kind);
  if (k.name !== undefined && k.name !== '') return `${kind}:${JSON.stringify(k.name)}`;
  return `${kind}:${k.id !== undefined && String(k.id) !== '' ? String(k.id) : '?'}`;
}
