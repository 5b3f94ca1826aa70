/**
 * Copies of entity properties, shared by the stores: what a store keeps or sends must not change
 * when the caller later mutates its object, and a value Datastore cannot store is refused when it
 * is written (with the property's path), not later inside a commit: a `StoreRejectedError`, the
 * same from every store, since writing it again would fail again.
 */
import { Datastore } from '@google-cloud/datastore';
import { StoreRejectedError } from '../errors/errors';
import type { Properties } from '../types';
import { copyKey } from '../keys/keys';

/** How a copy treats Datastore's number wrappers. */
export interface CopyOptions {
  /**
   * Hand numbers out the way a Datastore read does: a `Double` becomes a plain number, an `Int`
   * a plain number when it is a safe integer (unsafe ones stay `Int`). Defaults to false: the
   * wrappers are copied as they are.
   */
  unwrapNumbers?: boolean;
}

/**
 * A deep copy of an entity's properties. Supported values: null, booleans, numbers, strings,
 * `Date`, `Buffer` (a `Uint8Array` becomes a `Buffer`), `Key`, `Datastore.int`/`double`/`geoPoint`,
 * arrays (not directly inside arrays) and plain objects (embedded entities). Properties whose value
 * is `undefined` are left out. Anything else (a bigint, function, symbol, `Map`, `Set`, class
 * instance, an array inside an array, an invalid `Date`) throws a `StoreRejectedError` naming the
 * property.
 */
export function copyProperties(properties: Properties, options: CopyOptions = {}): Properties {
  if (!isPlainObject(properties)) {
    throw new StoreRejectedError(`entity properties must be a plain object, not ${describe(properties)}`);
  }
  return copyObject(properties, '', options);
}

/** True for `{}`-style objects (embedded entities), false for class instances, arrays and null. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function copyObject(object: Record<string, unknown>, path: string, options: CopyOptions): Properties {
  const copy: Properties = {};
  for (const [name, value] of Object.entries(object)) {
    if (value !== undefined) copy[name] = copyValue(value, path ? `${path}.${name}` : name, false, options);
  }
  return copy;
}

function copyValue(value: unknown, path: string, inArray: boolean, options: CopyOptions): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean' || typeof value === 'number') {
    return value;
  }
  if (value instanceof Date) return copyDate(value, path);
  if (value instanceof Uint8Array) return Buffer.from(value);
  if (Datastore.isKey(value)) return copyKey(value);
  if (Datastore.isInt(value)) return copyInt(value.value, options);
  if (Datastore.isDouble(value)) return options.unwrapNumbers ? value.value : Datastore.double(value.value);
  if (Datastore.isGeoPoint(value)) {
    return Datastore.geoPoint({ latitude: value.value.latitude, longitude: value.value.longitude });
  }
  if (Array.isArray(value)) return copyArray(value, path, inArray, options);
  if (isPlainObject(value)) return copyObject(value, path, options);
  throw new StoreRejectedError(
    `property ${path} cannot be stored: ${describe(value)} is not a Datastore value ` +
      '(use null, a boolean, number, string, Date, Buffer, Key, array, plain object, or Datastore.int/double/geoPoint)',
  );
}

function copyArray(values: unknown[], path: string, inArray: boolean, options: CopyOptions): unknown[] {
  if (inArray) throw new StoreRejectedError(`property ${path} cannot be stored: Datastore does not allow an array inside an array`);
  return values.map((value, i) => {
    if (value === undefined) throw new StoreRejectedError(`property ${path}[${i}] cannot be stored: undefined`);
    return copyValue(value, `${path}[${i}]`, true, options);
  });
}

function copyDate(date: Date, path: string): Date {
  if (Number.isNaN(date.getTime())) throw new StoreRejectedError(`property ${path} cannot be stored: an invalid Date`);
  return new Date(date.getTime());
}

function copyInt(digits: string, options: CopyOptions): unknown {
  const number = Number(digits);
  return options.unwrapNumbers && Number.isSafeInteger(number) ? number : Datastore.int(digits);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return `an instance of ${value.constructor?.name ?? 'a class'}`;
  return `a ${typeof value}`;
}
