/**
 * Writing an entity back as it was read. The Locker reads a user's entity and puts it back with
 * changed lock fields, so a read→put must keep every property's type and index setting:
 *
 * - A double with an integral value (`1.0`) is handed out as a plain number, which the client
 *   would write as an integer; a number found where the read had such a double is written as a
 *   double again.
 * - Values the read found excluded from indexes stay excluded, as do the names the caller gives.
 * - Values Datastore only accepts unindexed (strings and blobs over 1500 bytes) are excluded.
 *
 * {@link writeArgs} gathers this into the `{ key, data, excludeFromIndexes }` object that
 * `Transaction.save` and the client's `entity.entityToEntityProto` both take, so a put in a
 * transaction and a compare-and-swap commit write an entity the same way.
 */
import { Datastore, type Key } from '@google-cloud/datastore';
import type { Properties } from '../types';
import { pathKey, type Shape, type Step } from './datastore-protos';
import { copyKey } from './keys';
import { copyProperties, isPlainObject } from './values';

/** Datastore's largest indexed string or blob, in bytes. */
const MAX_INDEXED_BYTES = 1500;

/** An entity to write, in the shape `Transaction.save` and `entity.entityToEntityProto` take. */
export interface WriteArgs {
  key: Key;
  data: Properties;
  excludeFromIndexes: string[];
}

/**
 * What to write for `properties` (copied and checked), so that an entity read with `shape` keeps
 * its types and index settings, and the `excludeFromIndexes` names are unindexed.
 */
export function writeArgs(key: Key, properties: Properties, excludeFromIndexes: readonly string[], shape?: Shape): WriteArgs {
  const data = restoreDoubles(copyProperties(properties), shape?.integralDoubles);
  return { key: copyKey(key), data, excludeFromIndexes: indexExclusions(data, excludeFromIndexes, shape?.unindexed) };
}

/**
 * The properties with each integral number found at one of `integralDoubles` wrapped in
 * `Datastore.double`, so it is written as a double again.
 */
export function restoreDoubles(properties: Properties, integralDoubles: ReadonlySet<string> | undefined): Properties {
  return integralDoubles && integralDoubles.size > 0 ? restoredObject(properties, [], integralDoubles) : properties;
}

/**
 * The `excludeFromIndexes` paths of a put: each named property whatever its shape (a value, an
 * array's values, an embedded entity's properties), what the read found unindexed, and every
 * string or blob too large to be indexed.
 *
 * The client walks the entity once per path, so a name gets only the paths that reach its value:
 * `a` for a plain value, `a` and `a.*` for an embedded entity, `a[]` for an array (and `a[].*`
 * when it holds embedded entities), none when the property is absent. The client does nothing
 * with the other variants of such a value, so this excludes exactly what all four would.
 */
export function indexExclusions(
  properties: Properties,
  names: readonly string[],
  unindexed: ReadonlySet<string> = new Set(),
): string[] {
  const paths = new Set<string>();
  for (const name of names) namePaths(name, properties, paths);
  for (const path of unindexed) paths.add(path);
  for (const [name, value] of Object.entries(properties)) largeValuePaths(value, name, paths);
  return [...paths];
}

/** Adds the exclusion paths that reach property `name`'s value (see {@link indexExclusions}). */
function namePaths(name: string, properties: Properties, paths: Set<string>): void {
  if (name.includes('.') || name.includes('[')) {
    // The client reads these characters as path syntax: keep every variant, as it was given.
    for (const path of [name, `${name}[]`, `${name}.*`, `${name}[].*`]) paths.add(path);
    return;
  }
  if (!Object.hasOwn(properties, name)) return;
  const value = properties[name];
  if (Array.isArray(value)) {
    paths.add(`${name}[]`);
    if (value.some(isPlainObject)) paths.add(`${name}[].*`);
  } else {
    paths.add(name);
    if (isPlainObject(value)) paths.add(`${name}.*`);
  }
}

function restored(value: unknown, path: Step[], doubles: ReadonlySet<string>): unknown {
  if (typeof value === 'number') {
    return Number.isInteger(value) && doubles.has(pathKey(path)) ? Datastore.double(value) : value;
  }
  if (Array.isArray(value)) return value.map((item: unknown, i) => restored(item, [...path, i], doubles));
  if (isPlainObject(value)) return restoredObject(value, path, doubles);
  return value;
}

function restoredObject(object: Record<string, unknown>, path: Step[], doubles: ReadonlySet<string>): Properties {
  const result: Properties = {};
  for (const [name, value] of Object.entries(object)) result[name] = restored(value, [...path, name], doubles);
  return result;
}

/**
 * Adds the `excludeFromIndexes` paths (`a`, `a[]`, `a.b`) of strings and blobs over the indexed
 * limit: what the client's `excludeLargeProperties` finds for strings, without its copy of every
 * string, and blobs, which it misses.
 */
function largeValuePaths(value: unknown, path: string, paths: Set<string>): void {
  if (typeof value === 'string') {
    if (value.length > MAX_INDEXED_BYTES / 3 && Buffer.byteLength(value) > MAX_INDEXED_BYTES) paths.add(path);
  } else if (Buffer.isBuffer(value)) {
    if (value.length > MAX_INDEXED_BYTES) paths.add(path);
  } else if (Array.isArray(value)) {
    for (const item of value) largeValuePaths(item, `${path}[]`, paths);
  } else if (isPlainObject(value)) {
    for (const [name, item] of Object.entries(value)) largeValuePaths(item, `${path}.${name}`, paths);
  }
}
