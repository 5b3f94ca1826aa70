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
 * The opening of a path's text form: what `pathKey` writes for the path's parent, without its
 * closing bracket and with the separator for one more step (`[` at the top level, `["a",` inside
 * property `a`). The decoder passes it down instead of an array per value, and writes a value's
 * {@link pathKey} (`placeKey`) only where the shape or an error needs it.
 */
type PathOpening = string;

/** The opening at the top level. */
const TOP: PathOpening = '[';

/** {@link pathKey} of step `step` under `opening`. */
function placeKey(opening: PathOpening, step: Step): string {
  return `${opening}${JSON.stringify(step)}]`;
}

/** The opening of the values under step `step` of `opening`. */
function openingOf(opening: PathOpening, step: Step): PathOpening {
  return `${opening}${JSON.stringify(step)},`;
}

/**
 * Decodes a stored entity: one a lookup found, or one the store encoded (its values carry no
 * `valueType`: the field that is set says the type).
 */
export function decodeEntity(entity: RawEntity): Decoded {
  const decoded: Decoded = { properties: {}, integralDoubles: new Set(), unindexed: new Set() };
  decoded.properties = decodeProperties(entity.properties ?? {}, TOP, decoded);
  return decoded;
}

/**
 * The properties of a stored entity alone, as {@link decodeEntity} decodes them, for a read that
 * never writes the entity back (a ledger record, a query's result): no shape is gathered.
 */
export function decodeEntityProperties(entity: RawEntity): Properties {
  return decodeProperties(entity.properties ?? {}, TOP, undefined);
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

/** Decodes the properties at `opening`; gathers the shape into `into` when given. */
function decodeProperties(properties: Record<string, RawValue>, opening: PathOpening, into: Decoded | undefined): Properties {
  const decoded: Properties = {};
  for (const name of Object.keys(properties)) decoded[name] = decodeValue(properties[name]!, opening, name, into);
  return decoded;
}

/** Decodes the value at step `step` of `opening` (its path's text is written only where the shape or an error needs it). */
function decodeValue(value: RawValue, opening: PathOpening, step: Step, into: Decoded | undefined): unknown {
  if (into && value.excludeFromIndexes) into.unindexed.add(placeKey(opening, step));
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
      return decodeDouble(Number(value.doubleValue ?? 0), opening, step, into);
    case 'timestampValue':
      return decodeTimestamp(value.timestampValue ?? {});
    case 'blobValue':
      return typeof value.blobValue === 'string' ? Buffer.from(value.blobValue, 'base64') : Buffer.from(value.blobValue ?? []);
    case 'keyValue':
      return keyFromProto(value.keyValue ?? {});
    case 'geoPointValue':
      return Datastore.geoPoint({ latitude: value.geoPointValue?.latitude ?? 0, longitude: value.geoPointValue?.longitude ?? 0 });
    case 'entityValue':
      return decodeProperties(value.entityValue?.properties ?? {}, openingOf(opening, step), into);
    case 'arrayValue': {
      const inner = openingOf(opening, step);
      return (value.arrayValue?.values ?? []).map((item, i) => decodeValue(item, inner, i, into));
    }
    default:
      throw new TypeError(`property ${placeKey(opening, step)} has a value of unknown type ${String(value.valueType)}`);
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

function decodeDouble(number: number, opening: PathOpening, step: Step, into: Decoded | undefined): number {
  if (into && Number.isInteger(number)) into.integralDoubles.add(placeKey(opening, step));
  return number;
}

function decodeTimestamp(timestamp: { seconds?: string | number | null; nanos?: number | null }): Date {
  return new Date(Number(timestamp.seconds ?? 0) * 1000 + Math.floor(Number(timestamp.nanos ?? 0) / 1e6));
}
