/**
 * Writing an entity back as it was read. The Locker reads a user's entity and puts it back with
 * changed lock fields, so a read→put must keep every property's type and index setting:
 *
 * - A double with an integral value (`1.0`) is handed out as a plain number, which would be
 *   written as an integer; a number found where the read had such a double is written as a
 *   double again.
 * - Values the read found excluded from indexes stay excluded, as do the names the caller gives
 *   (and strings and blobs too long to be indexed: see `datastore-encode.ts`).
 *
 * {@link writeArgs} gathers this into the {@link EntityWrite} that a put in a transaction and a
 * compare-and-swap commit both encode, so both write an entity the same way.
 */
import { Datastore, type Key } from '@google-cloud/datastore';
import type { Properties } from '../../types';
import type { EntityWrite } from './encode';
import { pathKey, type Shape, type Step } from './protos';
import { copyProperties, isPlainObject } from '../values';

/**
 * What to write for `properties` (copied and checked: a value the store cannot hold is a
 * `StoreRejectedError`), so that an entity read with `shape` keeps its types and index settings,
 * and the `excludeFromIndexes` names are unindexed.
 */
export function writeArgs(key: Key, properties: Properties, excludeFromIndexes: readonly string[], shape?: Shape): EntityWrite {
  const data = restoreDoubles(copyProperties(properties), shape?.integralDoubles);
  // Every caller encodes the write at once (`entityProto`), so the key and the names are read
  // before the caller can change them: no copy of either.
  return { key, data, excludeFromIndexes, unindexed: shape?.unindexed ?? new Set() };
}

/**
 * The properties with each integral number found at one of `integralDoubles` wrapped in
 * `Datastore.double`, so it is written as a double again.
 */
export function restoreDoubles(properties: Properties, integralDoubles: ReadonlySet<string> | undefined): Properties {
  return integralDoubles && integralDoubles.size > 0 ? restoredObject(properties, [], integralDoubles) : properties;
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
