/**
 * Entity properties as Firestore document data, both ways, so that what a read hands out and a
 * write takes back round-trips as on Datastore:
 *
 * | property value | stored as | read back as |
 * | --- | --- | --- |
 * | `Date` | timestamp | `Date` (whole milliseconds, as the library writes) |
 * | `Buffer` (or `Uint8Array`) | bytes | `Buffer` |
 * | a number | integer when a safe integer, else double (the Firestore client's own rule) | a number |
 * | `Datastore.double(x)` | `x` as a number (an integral one is stored as an integer) | a number |
 * | `Datastore.int(d)` | an integer (a `bigint` beyond 2^53) | a number, or `Datastore.int` beyond 2^53 |
 * | `Datastore.geoPoint` | geo point | `Datastore.geoPoint` |
 * | `Key` | a reference to its document (`paths.ts`) | `Key` |
 * | array, plain object | array, map | array, plain object |
 *
 * An integer beyond 2^53 reads back whole only if the `Firestore` client was built with
 * `useBigInt: true`; without it the client hands it out rounded, as a number, and a write back
 * stores the rounded value. The client writes every safe integral number as an integer, so a
 * double with an integral value in a user's document (`1.0`) becomes an integer when a step
 * writes the document back: its value is kept, its type is not (Datastore keeps both). Values
 * are checked and copied first (`copyProperties`): what Datastore cannot store is refused with the
 * same `StoreRejectedError` as in every store, and so is a field name Firestore refuses (empty, or
 * `__…__`), before anything is sent.
 */
import { Datastore } from '@google-cloud/datastore';
import { DocumentReference, GeoPoint, Timestamp, type DocumentData, type Firestore } from '@google-cloud/firestore';
import { StoreRejectedError } from '../../errors/errors';
import type { Properties } from '../../types';
import { copyProperties, isPlainObject } from '../values';
import { documentOf, keyOf } from './paths';

/** The document data to write for `properties` (checked and copied: a `StoreRejectedError` for what cannot be stored). */
export function toDocument(firestore: Firestore, properties: Properties): DocumentData {
  const copy = copyProperties(properties);
  const data: DocumentData = {};
  for (const [name, value] of Object.entries(copy)) data[fieldName(name, name)] = toFirestore(firestore, value, name);
  return data;
}

/** Firestore's field names are not empty and not `__…__` (it reserves those). */
const RESERVED_FIELD = /^__.*__$/;

function fieldName(name: string, path: string): string {
  if (name === '' || RESERVED_FIELD.test(name)) {
    throw new StoreRejectedError(`property ${path} cannot be stored: Firestore field names are not empty and not "__…__"`);
  }
  return name;
}

function toFirestore(firestore: Firestore, value: unknown, path: string): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Date || Buffer.isBuffer(value)) return value;
  if (Datastore.isKey(value)) return documentOf(firestore, value);
  if (Datastore.isInt(value)) {
    const number = Number(value.value);
    return Number.isSafeInteger(number) ? number : BigInt(value.value);
  }
  if (Datastore.isDouble(value)) return value.value;
  if (Datastore.isGeoPoint(value)) return new GeoPoint(value.value.latitude, value.value.longitude);
  if (Array.isArray(value)) return value.map((item: unknown, i) => toFirestore(firestore, item, `${path}[${i}]`));
  if (isPlainObject(value)) {
    const map: DocumentData = {};
    for (const [name, item] of Object.entries(value)) map[fieldName(name, `${path}.${name}`)] = toFirestore(firestore, item, `${path}.${name}`);
    return map;
  }
  return value;
}

/** The properties a document's data stands for, as a Datastore read hands them out. */
export function fromDocument(data: DocumentData): Properties {
  const properties: Properties = {};
  for (const [name, value] of Object.entries(data)) properties[name] = fromFirestore(value);
  return properties;
}

function fromFirestore(value: unknown): unknown {
  if (typeof value === 'bigint') {
    const number = Number(value);
    return Number.isSafeInteger(number) ? number : Datastore.int(value.toString());
  }
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Timestamp) return value.toDate();
  if (value instanceof Date) return new Date(value.getTime());
  if (value instanceof Uint8Array) return Buffer.from(value);
  if (value instanceof GeoPoint) return Datastore.geoPoint({ latitude: value.latitude, longitude: value.longitude });
  if (value instanceof DocumentReference) return keyOf(value) ?? value.path;
  if (Array.isArray(value)) return value.map((item: unknown) => fromFirestore(item));
  if (isPlainObject(value)) return fromDocument(value);
  return value;
}

/** A read's properties, as a read of what was just written would hand them out (for the snapshot a write returns). */
export function asRead(properties: Properties): Properties {
  return copyProperties(properties, { unwrapNumbers: true });
}
