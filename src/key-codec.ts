/**
 * Keys in the legacy url-safe encoding of App Engine's `datastore.Key.Encode()`, which the Go
 * library puts in `X-Lock-Key`: the protocol-buffer `Reference` (app, path, namespace), base64url
 * without padding. Written here so decoding never trusts its input: every malformed key is a
 * `BadRequestError`, never a crash.
 */
import { Key } from '@google-cloud/datastore';
import { BadRequestError } from './errors';
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

/** Encodes a complete key; `app` is the Reference's app id (e.g. `s~my-project`). */
export function encodeKey(key: Key, app: string): string {
  const elements: Buffer[] = [];
  for (const k of ancestry(key)) {
    const parts = [varint(TAG_ELEMENT_START), stringField(TAG_TYPE, k.kind)];
    if (k.name !== undefined) parts.push(stringField(TAG_NAME, k.name));
    else if (k.id !== undefined) parts.push(varint(TAG_ID), varint(BigInt(k.id)));
    else throw new TypeError(`key ${keyPath(key)} is incomplete: it has neither an id nor a name`);
    parts.push(varint(TAG_ELEMENT_END));
    elements.push(...parts);
  }
  const path = Buffer.concat(elements);
  const fields = [stringField(TAG_APP, app), varint(TAG_PATH), varint(path.length), path];
  if (key.namespace) fields.push(stringField(TAG_NAMESPACE, key.namespace));
  return Buffer.concat(fields).toString('base64url');
}

/** Decodes an encoded key, or throws `BadRequestError` saying what is wrong with it. */
export function decodeKey(encoded: string): Key {
  if (encoded.length === 0 || encoded.length > MAX_ENCODED_LENGTH) throw bad('its length is out of range');
  const text = encoded.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');
  if (!/^[A-Za-z0-9_-]+$/.test(text)) throw bad('it is not base64url');
  const reader = new Reader(Buffer.from(text, 'base64url'));
  let path: Array<string | number> | undefined;
  let namespace: string | undefined;
  while (!reader.done()) {
    const tag = reader.varintNumber();
    if (tag === TAG_APP) reader.string();
    else if (tag === TAG_NAMESPACE) namespace = reader.string();
    else if (tag === TAG_PATH) path = readPath(new Reader(reader.bytes()));
    else throw bad(`it has an unexpected field (tag ${tag})`);
  }
  if (!path || path.length === 0) throw bad('it has no path');
  return new Key({ namespace: namespace || undefined, path });
}

function readPath(reader: Reader): Array<string | number> {
  const path: Array<string | number> = [];
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
    if (name !== undefined && name !== '') path.push(kind, name);
    else if (id !== undefined && id > 0n) path.push(kind, idValue(id));
    else throw bad(`its ${kind} element has neither an id nor a name`);
  }
  return path;
}

/** Numeric ids must be exact as JavaScript numbers. */
function idValue(id: bigint): number {
  if (id > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw bad('its id is beyond 2^53, which this library does not support');
  }
  return Number(id);
}

function bad(why: string): BadRequestError {
  return new BadRequestError(`X-Lock-Key is not a valid key: ${why}`);
}

function stringField(tag: number, value: string): Buffer {
  const bytes = Buffer.from(value, 'utf8');
  return Buffer.concat([varint(tag), varint(bytes.length), bytes]);
}

function varint(value: number | bigint): Buffer {
  let v = BigInt(value);
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return Buffer.from(out);
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

  varintNumber(): number {
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
