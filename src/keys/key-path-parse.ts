/**
 * A key read back from the text `keyPath()` writes (`Order:42/Line:"a"`), so an operator can type
 * the key as the status page shows it. The inverse of `keyPath` for every complete key: each
 * element is a kind (plain, or JSON-quoted when it has other characters), `:`, then a numeric id or
 * a JSON-quoted name. Anything else is a `RangeError` saying where.
 */
import { Datastore, Key } from '@google-cloud/datastore';

/** The longest text read as a key path. */
const MAX_LENGTH = 1_500;

const PLAIN_KIND = /^[A-Za-z0-9_.-]+/;
const ID = /^[1-9][0-9]{0,18}/;

/** The key `text` names in `namespace` (the default one when empty or left out). */
export function parseKeyPath(text: string, namespace?: string): Key {
  if (typeof text !== 'string' || text.trim() === '') throw new RangeError('a key path is empty');
  if (text.length > MAX_LENGTH) throw new RangeError(`a key path is at most ${MAX_LENGTH} characters`);
  const path: Array<string | number | ReturnType<typeof Datastore.int>> = [];
  let rest = text.trim();
  for (;;) {
    const kind = readKind(rest);
    rest = rest.slice(kind.length);
    if (!rest.startsWith(':')) throw new RangeError(`expected ":" after the kind ${JSON.stringify(kind.value)} in ${JSON.stringify(text)}`);
    rest = rest.slice(1);
    const id = readIdOrName(rest, text);
    rest = rest.slice(id.length);
    path.push(kind.value, id.value);
    if (rest === '') break;
    if (!rest.startsWith('/')) throw new RangeError(`expected "/" or the end after ${JSON.stringify(text.slice(0, text.length - rest.length))}`);
    rest = rest.slice(1);
  }
  return new Key(namespace ? { namespace, path } : { path });
}

interface Read<T> {
  value: T;
  /** Characters read. */
  length: number;
}

function readKind(rest: string): Read<string> {
  if (rest.startsWith('"')) return readQuoted(rest, 'kind');
  const plain = PLAIN_KIND.exec(rest);
  if (!plain) throw new RangeError(`expected a kind at ${JSON.stringify(rest.slice(0, 20))}`);
  return { value: plain[0], length: plain[0].length };
}

function readIdOrName(rest: string, text: string): Read<string | number | ReturnType<typeof Datastore.int>> {
  if (rest.startsWith('"')) {
    const name = readQuoted(rest, 'name');
    if (name.value === '') throw new RangeError('a key name is never empty');
    return name;
  }
  const id = ID.exec(rest);
  if (!id) throw new RangeError(`expected a numeric id or a "quoted name" in ${JSON.stringify(text)}`);
  const n = BigInt(id[0]);
  if (n < 1n || n > 9_223_372_036_854_775_807n) throw new RangeError(`the id ${id[0]} is not a Datastore id (1 to 2^63-1)`);
  return { value: n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : Datastore.int(n.toString()), length: id[0].length };
}

/** A JSON string at the start of `rest`. */
function readQuoted(rest: string, what: string): Read<string> {
  for (let end = 1; end < rest.length; end++) {
    if (rest[end] === '\\') { end++; continue; }
    if (rest[end] !== '"') continue;
    const raw = rest.slice(0, end + 1);
    try {
      return { value: JSON.parse(raw) as string, length: raw.length };
    } catch {
      throw new RangeError(`the ${what} ${raw} is not a JSON string`);
    }
  }
  throw new RangeError(`the ${what} starting ${JSON.stringify(rest.slice(0, 20))} has no closing quote`);
}
