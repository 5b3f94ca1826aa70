/**
 * Renders an entity's properties as indented, JSON-like text for an alert: Dates as ISO strings,
 * Buffers and keys summarised, Datastore number wrappers unwrapped, and everything bounded (long
 * strings, long arrays, deep nesting, cycles), so any entity yields a readable message.
 */

/** Bounds that keep one alert readable whatever the entity holds. */
const LIMITS = Object.freeze({
  /** Characters of a string shown before it is cut. */
  string: 1_000,
  /** Items of an array, or properties of an object, shown before the rest is counted. */
  items: 100,
  /** Nesting shown before deeper values are elided. */
  depth: 10,
  /** Characters of the whole rendering. */
  total: 20_000,
});

/** A JSON-compatible tree: what the properties become before they are printed. */
type Plain = null | boolean | number | string | Plain[] | { [name: string]: Plain };

/** Renders a value (usually an entity's properties) as indented JSON-like text. */
export function renderValue(value: unknown): string {
  const text = JSON.stringify(toPlain(value, 0, new Set()), null, 2);
  if (text.length <= LIMITS.total) return text;
  return `${text.slice(0, LIMITS.total)}\n… (${text.length - LIMITS.total} more characters)`;
}

function toPlain(value: unknown, depth: number, seen: Set<object>): Plain {
  if (typeof value === 'object') return value === null ? null : objectToPlain(value, depth, seen);
  switch (typeof value) {
    case 'string':
      return truncate(value);
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'boolean':
      return value;
    case 'bigint':
      return value.toString();
    case 'undefined':
      return '[undefined]';
    case 'function':
      return '[function]';
    default:
      return String(value);
  }
}

function objectToPlain(value: object, depth: number, seen: Set<object>): Plain {
  const special = summarise(value);
  if (special !== undefined) return special;
  if (seen.has(value)) return '[circular]';
  if (depth >= LIMITS.depth) return Array.isArray(value) ? '[array …]' : '[object …]';
  seen.add(value);
  try {
    return Array.isArray(value) ? arrayToPlain(value, depth, seen) : entriesToPlain(value, depth, seen);
  } finally {
    seen.delete(value);
  }
}

/** Values shown as one string or number rather than walked. */
function summarise(value: object): Plain | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (Buffer.isBuffer(value)) return `[Buffer: ${value.length} bytes]`;
  if (ArrayBuffer.isView(value)) return `[${value.constructor.name}: ${value.byteLength} bytes]`;
  if (isDatastoreKey(value)) {
    const where = value.namespace ? ` in ${value.namespace}` : '';
    return `[Key ${value.path.map(String).join(', ')}${where}]`;
  }
  if (isDatastoreNumber(value)) return value.value;
  return undefined;
}

function arrayToPlain(value: unknown[], depth: number, seen: Set<object>): Plain {
  const shown = value.slice(0, LIMITS.items).map((item) => toPlain(item, depth + 1, seen));
  if (value.length > LIMITS.items) shown.push(`… ${value.length - LIMITS.items} more items`);
  return shown;
}

function entriesToPlain(value: object, depth: number, seen: Set<object>): Plain {
  const entries = Object.entries(value);
  const out: { [name: string]: Plain } = {};
  for (const [name, item] of entries.slice(0, LIMITS.items)) out[name] = toPlain(item, depth + 1, seen);
  if (entries.length > LIMITS.items) out['…'] = `${entries.length - LIMITS.items} more properties`;
  return out;
}

function truncate(text: string): string {
  if (text.length <= LIMITS.string) return text;
  return `${text.slice(0, LIMITS.string)}… (${text.length} characters)`;
}

/** A `@google-cloud/datastore` Key, recognised by shape so this file needs no client. */
function isDatastoreKey(value: object): value is { path: unknown[]; namespace?: string } {
  const candidate = value as { path?: unknown; kind?: unknown };
  return value.constructor?.name === 'Key' && Array.isArray(candidate.path) && typeof candidate.kind === 'string';
}

/** A Datastore `Int` or `Double` wrapper, as read with `wrapNumbers`. */
function isDatastoreNumber(value: object): value is { value: string | number } {
  const candidate = value as { type?: unknown; value?: unknown };
  const wrapped = candidate.type === 'DatastoreInt' || candidate.type === 'DatastoreDouble';
  return wrapped && (typeof candidate.value === 'string' || typeof candidate.value === 'number');
}
