/**
 * Writing an entity back as it was read. The Locker reads a user's entity and puts it back with
 * changed lock fields, so a read→put must keep every property's type and index setting:
 *
 * - A double with an integral value (`1.0`) is handed out as a plain number, which the client
 *   would write as an integer; a number found where the read had such a double is written as a
 *   double again.
 * - Values the read found excluded from indexes stay excluded, as do the names the caller gives.
 * - Values Datastore only accepts unindexed (strings and blobs over 1500 bytes) are excluded:
 *   strings by the client's `excludeLargeProperties`, blobs here.
 */
import { Datastore } from '@google-cloud/datastore';
import type { Properties } from '../types';
import { pathKey, type Step } from './datastore-protos';
import { isPlainObject } from './values';

/** Datastore's largest indexed string or blob, in bytes. */
const MAX_INDEXED_BYTES = 1500;

/**
 * The properties with each integral number found at one of `integralDoubles` wrapped in
 * `Datastore.double`, so it is written as a double again.
 */
export function restoreDoubles(properties: Properties, integralDoubles: ReadonlySet<string> | undefined): Properties {
  return integralDoubles && integralDoubles.size > 0 ? restoredObject(properties, [], integralDoubles) : properties;
}

/**
 * The `excludeFromIndexes` paths of a put: each named property whatever its shape (a value, an
 * array's values, an embedded entity's properties), what the read found unindexed, and every blob
 * too large to be indexed.
 */
export function indexExclusions(
  properties: Properties,
  names: readonly string[],
  unindexed: ReadonlySet<string> = new Set(),
): string[] {
  const paths = new Set(names.flatMap((name) => [name, `${name}[]`, `${name}.*`, `${name}[].*`]));
  for (const path of unindexed) paths.add(path);
  for (const [name, value] of Object.entries(properties)) largeBlobPaths(value, name, paths);
  return [...paths];
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

/** Adds the `excludeFromIndexes` paths (`a`, `a[]`, `a.b`) of blobs over the indexed limit. */
function largeBlobPaths(value: unknown, path: string, paths: Set<string>): void {
  if (Buffer.isBuffer(value)) {
    if (value.length > MAX_INDEXED_BYTES) paths.add(path);
  } else if (Array.isArray(value)) {
    for (const item of value) largeBlobPaths(item, `${path}[]`, paths);
  } else if (isPlainObject(value)) {
    for (const [name, item] of Object.entries(value)) largeBlobPaths(item, `${path}.${name}`, paths);
  }
}
