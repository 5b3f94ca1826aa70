/**
 * Entities and keys as the Datastore API sends them, and their decoding. The store decodes lookups
 * itself, keeping what a faithful write-back needs: a double `1.0` and an integer `1` both read
 * as `1`, so where the integral doubles were is remembered, and so is which values were excluded
 * from indexes.
 */
import { Datastore, Key } from '@google-cloud/datastore';
import type { Properties } from '../../types';

/** One stored value (`google.datastore.v1.Value`), as the client's gRPC layer decodes it. */
export interface RawValue {
  valueType?: string | null;
  excludeFromIndexes?: boolean | null;
  nullValue?: 'NULL_VALUE' | 0 | null;
  booleanValue?: boolean | null;
  integerValue?: string | number | null;
  doubleValue?: number | null;
  timestampValue?: { seconds?: string | number | null; nanos?: number | null } | null;
  keyValue?: RawKey | null;
  stringValue?: string | null;
  blobValue?: Uint8Array | string | null;
  geoPointValue?: { latitude?: number | null; longitude?: number | null } | null;
  entityValue?: RawEntity | null;
  arrayValue?: { values?: RawValue[] | null } | null;
}

/** A stored entity (`google.datastore.v1.Entity`). */
export interface RawEntity {
  key?: RawKey | null;
  properties?: Record<string, RawValue> | null;
}

/** A key (`google.datastore.v1.Key`). */
export interface RawKey {
  partitionId?: { projectId?: string | null; databaseId?: string | null; namespaceId?: string | null } | null;
  path?: { kind?: string | null; id?: string | number | null; name?: string | null; idType?: string | null }[] | null;
}

/** An entity's properties as handed out, and what a write-back needs to store them as they were. */
export interface Decoded {
  /**
   * The properties: integers as numbers (`Datastore.int` beyond 2^53), doubles as numbers, geo
   * points as `Datastore.geoPoint`, timestamps as `Date`, blobs as `Buffer`, keys as `Key`,
   * embedded entities as plain objects.
   */
  properties: Properties;
  /** Where doubles with integral values were (paths as {@link pathKey} writes them). */
  integralDoubles: Set<string>;
  /** Values that were excluded from indexes (paths as {@link pathKey} writes them). */
  unindexed: Set<string>;
}

/** What a faithful write-back needs to know of an entity as it was read: a {@link Decoded} without its properties. */
export type Shape = Omit<Decoded, 'properties'>;

/** One step into a value: a property name or an array index. */
export type Step = string | number;

/** The text form of a path, as stored in `integralDoubles` and `unindexed`. */
export function pathKey(path: readonly Step[]): string {
  return JSON.stringify(path);
}

/**
 * Decodes a stored entity: one a lookup found, or one the store encoded (its values carry no
 * `valueType`: the field that is set says the type).
 */
export function decodeEntity(entity: RawEntity): Decoded {
  const decoded: Decoded = { properties: {}, integralDoubles: new Set(), unindexed: new Set() };
  decoded.properties = decodeProperties(entity.properties ?? {}, [], decoded);
  return decoded;
}

/** The API form of a key (an element with neither an id nor a name is sent with its kind alone). */
export function keyToProto(key: Key): RawKey {
  const path: NonNullable<RawKey['path']> = [];
  for (let k: Key | undefined = key; k; k = k.parent) {
    if (k.name !== undefined) path.unshift({ kind: k.kind, name: k.name });
    else if (k.id !== undefined) path.unshift({ kind: k.kind, id: String(k.id) });
    else path.unshift({ kind: k.kind });
  }
  return { partitionId: { namespaceId: key.namespace ?? '' }, path };
}

/** A `Key` from its API form. */
export function keyFromProto(proto: RawKey): Key {
  const path = (proto.path ?? []).flatMap((element) => {
    const kind = element.kind ?? '';
    if (element.name !== undefined && element.name !== null && element.idType !== 'id') return [kind, element.name];
    if (element.id !== undefined && element.id !== null) return [kind, Datastore.int(String(element.id))];
    return [kind];
  });
  const namespace = proto.partitionId?.namespaceId;
  return new Key(namespace ? { namespace, path } : { path });
}

function decodeProperties(properties: Record<string, RawValue>, path: Step[], into: Decoded): Properties {
  const decoded: Properties = {};
  for (const [name, value] of Object.entries(properties)) decoded[name] = decodeValue(value, [...path, name], into);
  return decoded;
}

function decodeValue(value: RawValue, path: Step[], into: Decoded): unknown {
  if (value.excludeFromIndexes) into.unindexed.add(pathKey(path));
  switch (value.valueType ?? typeOfValue(value)) {
    case 'nullValue':
      return null;
    case 'booleanValue':
      return value.booleanValue === true;
    case 'stringValue':
      return value.stringValue ?? '';
    case 'integerValue':
      return decodeInteger(String(value.integerValue ?? '0'));
    case 'doubleValue':
      return decodeDouble(Number(value.doubleValue ?? 0), path, into);
    case 'timestampValue':
      return decodeTimestamp(value.timestampValue ?? {});
    case 'blobValue':
      return typeof value.blobValue === 'string' ? Buffer.from(value.blobValue, 'base64') : Buffer.from(value.blobValue ?? []);
    case 'keyValue':
      return keyFromProto(value.keyValue ?? {});
    case 'geoPointValue':
      return Datastore.geoPoint({ latitude: value.geoPointValue?.latitude ?? 0, longitude: value.geoPointValue?.longitude ?? 0 });
    case 'entityValue':
      return decodeProperties(value.entityValue?.properties ?? {}, path, into);
    case 'arrayValue':
      return (value.arrayValue?.values ?? []).map((item, i) => decodeValue(item, [...path, i], into));
    default:
      throw new TypeError(`property ${pathKey(path)} has a value of unknown type ${String(value.valueType)}`);
  }
}

/** The value fields of `google.datastore.v1.Value`, one of which is set. */
const VALUE_FIELDS = [
  'nullValue',
  'booleanValue',
  'stringValue',
  'integerValue',
  'doubleValue',
  'timestampValue',
  'blobValue',
  'keyValue',
  'geoPointValue',
  'entityValue',
  'arrayValue',
] as const;

/** The type of a value built without `valueType`: the name of its one set field. */
function typeOfValue(value: RawValue): string | undefined {
  return VALUE_FIELDS.find((field) => value[field] !== undefined && value[field] !== null);
}

function decodeInteger(digits: string): unknown {
  const number = Number(digits);
  return Number.isSafeInteger(number) ? number : Datastore.int(digits);
}

function decodeDouble(number: number, path: Step[], into: Decoded): number {
  if (Number.isInteger(number)) into.integralDoubles.add(pathKey(path));
  return number;
}

function decodeTimestamp(timestamp: { seconds?: string | number | null; nanos?: number | null }): Date {
  return new Date(Number(timestamp.seconds ?? 0) * 1000 + Math.floor(Number(timestamp.nanos ?? 0) / 1e6));
}
