/**
 * Entities as the store sends them (`google.datastore.v1.Entity`), encoded by the store itself so
 * that what is written is exactly what was meant:
 *
 * - integers (safe JavaScript integers and `Datastore.int`, every digit) are `integerValue`;
 *   other numbers and `Datastore.double` are `doubleValue`;
 * - `Datastore.geoPoint` is a `geoPointValue`, `Date` a `timestampValue` (milliseconds), `Buffer`
 *   a `blobValue`, `Key` a `keyValue`, arrays `arrayValue`, plain objects embedded entities;
 * - a value is excluded from indexes when it sits under one of the names given (the whole value:
 *   an array's values, an embedded entity and everything in it), when the read it came from found
 *   it unindexed, or when it is a string or blob longer than Datastore indexes (1500 bytes).
 *   Array values themselves never carry the flag (Datastore refuses it there): their values do.
 *
 * The properties must have been checked and copied by `copyProperties` first.
 */
import { Datastore, type Key } from '@google-cloud/datastore';
import type { Properties } from '../../types';
import { keyToProto, pathKey, type RawEntity, type RawValue, type Step } from './protos';
import { isPlainObject } from '../values';

/** Datastore's largest indexed string or blob, in bytes. */
const MAX_INDEXED_BYTES = 1500;

/** An entity to write and how to index it. */
export interface EntityWrite {
  key: Key;
  data: Properties;
  /** Top-level properties kept out of indexes, whatever their shape. */
  excludeFromIndexes: readonly string[];
  /** Values to keep unindexed, as `pathKey` writes their paths (what a read found unindexed). */
  unindexed?: ReadonlySet<string>;
}

/** The entity proto of a write. */
export function entityProto(write: EntityWrite): RawEntity {
  const names = new Set(write.excludeFromIndexes);
  const unindexed = write.unindexed ?? new Set<string>();
  const properties: Record<string, RawValue> = {};
  for (const [name, value] of Object.entries(write.data)) {
    properties[name] = encodeValue(value, [name], names.has(name), unindexed);
  }
  return { key: keyToProto(write.key), properties };
}

function encodeValue(value: unknown, path: Step[], excludeAll: boolean, unindexed: ReadonlySet<string>): RawValue {
  if (Array.isArray(value)) {
    return { arrayValue: { values: value.map((item: unknown, i) => encodeValue(item, [...path, i], excludeAll, unindexed)) } };
  }
  const encoded = isPlainObject(value) ? embedded(value, path, excludeAll, unindexed) : scalar(value, path);
  if (excludeAll || unindexed.has(pathKey(path)) || isLarge(value)) encoded.excludeFromIndexes = true;
  return encoded;
}

function embedded(value: Record<string, unknown>, path: Step[], excludeAll: boolean, unindexed: ReadonlySet<string>): RawValue {
  const properties: Record<string, RawValue> = {};
  for (const [name, item] of Object.entries(value)) properties[name] = encodeValue(item, [...path, name], excludeAll, unindexed);
  return { entityValue: { properties } };
}

function scalar(value: unknown, path: Step[]): RawValue {
  if (value === null) return { nullValue: 'NULL_VALUE' };
  if (typeof value === 'boolean') return { booleanValue: value };
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'number') return Number.isSafeInteger(value) ? { integerValue: String(value) } : { doubleValue: value };
  if (value instanceof Date) return { timestampValue: timestamp(value.getTime()) };
  if (Buffer.isBuffer(value)) return { blobValue: value };
  if (Datastore.isKey(value)) return { keyValue: keyToProto(value) };
  if (Datastore.isInt(value)) return { integerValue: value.value };
  if (Datastore.isDouble(value)) return { doubleValue: Number(value.value) };
  if (Datastore.isGeoPoint(value)) return { geoPointValue: { latitude: value.value.latitude, longitude: value.value.longitude } };
  throw new TypeError(`property ${JSON.stringify(path)} has a value the store did not check: ${String(value)}`);
}

function isLarge(value: unknown): boolean {
  if (typeof value === 'string') return value.length > MAX_INDEXED_BYTES / 3 && Buffer.byteLength(value) > MAX_INDEXED_BYTES;
  return Buffer.isBuffer(value) && value.length > MAX_INDEXED_BYTES;
}

/** A protobuf Timestamp of epoch milliseconds. */
export function timestamp(ms: number): { seconds: string; nanos: number } {
  const seconds = Math.floor(ms / 1000);
  return { seconds: String(seconds), nanos: (ms - seconds * 1000) * 1e6 };
}
