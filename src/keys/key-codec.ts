/**
 * Keys in the legacy url-safe encoding of App Engine's `datastore.Key.Encode()`, which the Go
 * library puts in `X-Lock-Key`: the protocol-buffer `Reference` (app, path, namespace), base64url
 * without padding. Written here so decoding never trusts its input: every malformed key is a
 * `BadRequestError`, never a crash. The client's own `keyToLegacyUrlSafe` is asynchronous (it
 * looks the project id up first, so it cannot serve the synchronous `encodeKey`) and its
 * `keyFromLegacyUrlsafe` decodes without checking (ids come back as `Datastore.int`), so that
 * validating first and decoding with it would parse every key twice; measured, this codec encodes
 * and decodes as fast as the client's functions do.
 */
import { Datastore, Key } from '@google-cloud/datastore';
import { BadRequestError } from '../errors/errors';
import { ancestry, keyPath } from './key-path';

export { keyPath };

// Reference: app = 13 (string), path = 14 (message), name_space = 20 (string).
// Path: repeated group Element = 1 { type = 2 (string), id = 3 (int64), name = 4 (string) }.
const TAG_APP = (13 << 3) | 2;
const TAG_PATH = (14 << 3) | 2;
const TAG_NAMESPACE = (20 << 3) | 2;
const TAG_ELEMENT_START = (1 << 3) | 3;
const TAG_ELEMENT_END = (1 << 3) | 4;
const TAG_TYPE = (2 << 3) | 2;
const TAG_ID = (3 << 3) | 0;
const TAG_NAME = (4 << 3) | 2;

/** Longest encoded key accepted; real keys are far shorter (Datastore keys are at most 6 KiB). */
const MAX_ENCODED_LENGTH = 8192;
/** One element of a key's path as `new Key()` takes it: a kind, a name, or an id (`Datastore.int` beyond 2^53). */
type PathElement = string | number | ReturnType<typeof Datastore.int>;
/** The largest numeric id Datastore allocates or accepts: ids are positive int64s. */
const MAX_ID = 2n ** 63n - 1n;

/** Encodes a complete key; `app` is the Reference's app id (e.g. `s~my-project`). */
export function encodeKey(key: Key, app: string): string {
  const path = new Writer();
  for (const k of ancestry(key)) {
    path.varint(TAG_ELEMENT_START);
    path.string(TAG_TYPE, k.kind);
    if (k.name !== undefined) path.string(TAG_NAME, k.name);
    else if (k.id !== undefined) path.varint(TAG_ID).varint(numericId(key, k.id));
    else throw new TypeError(`key ${keyPath(key)} is incomplete: it has neither an id nor a name`);
    path.varint(TAG_ELEMENT_END);
  }
  const out = new Writer().string(TAG_APP, app).varint(TAG_PATH).bytes(path.done());
  if (key.namespace) out.string(TAG_NAMESPACE, key.namespace);
  return out.done().toString('base64url');
}

/** What Datastore accepts as a namespace; anything else would reach the store and be refused there. */
const NAMESPACE_PATTERN = /^[0-9A-Za-z._-]{1,100}$/;
/** Kinds and names that begin and end with `__` are Datastore's own. */
const RESERVED = /^__.*__$/s;

/**
 * Throws a `TypeError` saying why `key` could not travel in `X-Lock-Key` and come back as the same
 * key: incomplete, a kind or name that is empty, an id that is not a whole number from 1 to
 * 2^63-1 (ids beyond 2^53 must be given as strings or `Datastore.int`, as JavaScript numbers lose
 * their digits), or too long.
 */
export function checkDeliverable(key: Key, app: string): void {
  const refuse = (why: string): never => {
    throw new TypeError(`the key ${describe(key)} cannot be delivered in a task: ${why}`);
  };
  if (!key || typeof key !== 'object' || typeof key.kind !== 'string') refuse('it is not a Datastore key');
  for (const k of ancestry(key)) {
    if (typeof k.kind !== 'string' || k.kind === '') refuse('a kind is empty');
    if (k.name !== undefined && (typeof k.name !== 'string' || k.name === '')) refuse(`its ${k.kind} element has an empty name`);
  }
  let encoded = '';
  try {
    encoded = encodeKey(key, app);
  } catch (error) {
    refuse(error instanceof Error ? error.message : String(error));
  }
  if (encoded.length > MAX_ENCODED_LENGTH) refuse(`it encodes to ${encoded.length} characters, more than ${MAX_ENCODED_LENGTH}`);
  const back = decodeKey(encoded);
  if (describe(back) !== describe(key)) refuse(`it would arrive as ${describe(back)}`);
}

/** base64url (or standard base64), padded or not. */
const BASE64 = /^[A-Za-z0-9_\-+/]+=*$/;

/** Decodes an encoded key, or throws `BadRequestError` saying what is wrong with it. */
export function decodeKey(encoded: string): Key {
  if (encoded.length === 0 || encoded.length > MAX_ENCODED_LENGTH) throw bad('its length is out of range');
  // Node's base64url decoder also reads the standard alphabet and padding, so one check suffices.
  if (!BASE64.test(encoded)) throw bad('it is not base64url');
  const reader = new Reader(Buffer.from(encoded, 'base64url'));
  let path: PathElement[] | undefined;
  let namespace: string | undefined;
  while (!reader.done()) {
    const tag = reader.varintNumber();
    if (tag === TAG_APP) reader.string();
    else if (tag === TAG_NAMESPACE) namespace = reader.string();
    else if (tag === TAG_PATH) path = readPath(new Reader(reader.bytes()));
    else throw bad(`it has an unexpected field (tag ${tag})`);
  }
  if (!path || path.length === 0) throw bad('it has no path');
  if (namespace && !NAMESPACE_PATTERN.test(namespace)) throw bad(`its namespace ${JSON.stringify(namespace)} is not one Datastore accepts ([0-9A-Za-z._-], at most 100)`);
  return new Key({ namespace: namespace || undefined, path });
}

function readPath(reader: Reader): PathElement[] {
  const path: PathElement[] = [];
  while (!reader.done()) {
    if (reader.varintNumber() !== TAG_ELEMENT_START) throw bad('its path is malformed');
    let kind: string | undefined;
    let id: bigint | undefined;
    let name: string | undefined;
    for (;;) {
      if (reader.done()) throw bad('a path element is not terminated');
      const tag = reader.varintNumber();
      if (tag === TAG_ELEMENT_END) break;
      if (tag === TAG_TYPE) kind = reader.string();
      else if (tag === TAG_ID) id = reader.varint();
      else if (tag === TAG_NAME) name = reader.string();
      else throw bad(`a path element has an unexpected field (tag ${tag})`);
    }
    if (!kind) throw bad('a path element has no kind');
    if (RESERVED.test(kind) || (name !== undefined && RESERVED.test(name))) throw bad(`its ${kind} element uses a name Datastore reserves (__…__)`);
    if (name !== undefined && name !== '') path.push(kind, name);
    else if (id !== undefined && id > 0n) path.push(kind, idValue(id));
    else throw bad(`its ${kind} element has neither an id nor a name`);
  }
  return path;
}

/** A numeric id as a key path takes it: a number while exact, else `Datastore.int` (up to 2^63-1). */
function idValue(id: bigint): number | ReturnType<typeof Datastore.int> {
  if (id > MAX_ID) throw bad('its id is beyond 2^63-1, the largest Datastore id');
  return id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : Datastore.int(id.toString());
}

/** A key element's id as an int64 (a number while it is exact), or a `TypeError` saying why it is not one. */
function numericId(key: Key, id: number | string): number | bigint {
  const where = `key ${keyPath(key)}`;
  if (typeof id === 'number') {
    if (!Number.isSafeInteger(id) || id < 1) {
      throw new TypeError(`${where} has id ${id}, not a whole number from 1 to 2^53-1 (pass larger ids as strings or Datastore.int)`);
    }
    return id;
  }
  if (typeof id !== 'string' || !/^[1-9][0-9]{0,18}$/.test(id) || BigInt(id) > MAX_ID) {
    throw new TypeError(`${where} has id ${JSON.stringify(id)}, not a whole number from 1 to 2^63-1`);
  }
  return BigInt(id);
}

/** The key with its namespace, for messages. */
function describe(key: Key): string {
  return `${key.namespace ? `${key.namespace}:` : ''}${keyPath(key)}`;
}

function bad(why: string): BadRequestError {
  return new BadRequestError(`X-Lock-Key is not a valid key: ${why}`);
}

/** A protobuf writer into one growing buffer: varints (numbers or bigints), strings and byte fields. */
class Writer {
  private buf = Buffer.allocUnsafe(128);
  private pos = 0;

  varint(value: number | bigint): this {
    this.room(10);
    if (typeof value === 'number' && value >= 0 && value <= 0x7fffffff) {
      let v = value;
      while (v >= 0x80) {
        this.buf[this.pos++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      this.buf[this.pos++] = v;
      return this;
    }
    let v = BigInt(value);
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v > 0n) byte |= 0x80;
      this.buf[this.pos++] = byte;
    } while (v > 0n);
    return this;
  }

  /** A length-delimited field holding `value` in UTF-8. */
  string(tag: number, value: string): this {
    const length = Buffer.byteLength(value, 'utf8');
    this.varint(tag).varint(length).room(length);
    this.pos += this.buf.write(value, this.pos, 'utf8');
    return this;
  }

  /** The length of `bytes`, then the bytes. */
  bytes(bytes: Buffer): this {
    this.varint(bytes.length).room(bytes.length);
    this.pos += bytes.copy(this.buf, this.pos);
    return this;
  }

  done(): Buffer {
    return this.buf.subarray(0, this.pos);
  }

  private room(extra: number): this {
    if (this.pos + extra > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + extra));
      this.buf.copy(bigger, 0, 0, this.pos);
      this.buf = bigger;
    }
    return this;
  }
}

/** A bounds-checked protobuf reader; any overrun is a `BadRequestError`. */
class Reader {
  private pos = 0;
  constructor(private readonly buf: Buffer) {}

  done(): boolean {
    return this.pos >= this.buf.length;
  }

  varint(): bigint {
    let result = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (this.done()) throw bad('it is truncated');
      const byte = this.buf[this.pos++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
    }
    throw bad('it has an overlong number');
  }

  /** A tag or a length: at most 0xffffff. Four bytes are read as a number; longer forms take the bigint path. */
  varintNumber(): number {
    const start = this.pos;
    let result = 0;
    for (let shift = 0; shift < 28 && this.pos < this.buf.length; shift += 7) {
      const byte = this.buf[this.pos++]!;
      result |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) {
        if (result > 0xffffff) throw bad('it has an unexpected field');
        return result;
      }
    }
    this.pos = start;
    const v = this.varint();
    if (v > 0xffffffn) throw bad('it has an unexpected field');
    return Number(v);
  }

  bytes(): Buffer {
    const length = this.varintNumber();
    if (this.pos + length > this.buf.length) throw bad('it is truncated');
    const out = this.buf.subarray(this.pos, this.pos + length);
    this.pos += length;
    return out;
  }

  string(): string {
    return this.bytes().toString('utf8');
  }
}
