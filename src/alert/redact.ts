/**
 * Redaction of entity properties before they are put in an alert: by a list of property names, or
 * by a function that returns each property's replacement. Nested objects and arrays are walked
 * too, so a name matches at any depth.
 */
import type { Properties } from '../types';
import { TRUNCATED } from '../errors/error-text';

/** What a redacted value is shown as. */
export const REDACTED = '[redacted]';

/**
 * Property names whose values are replaced by `[redacted]`, or a function that returns the value
 * to show for a property (return `value` itself to keep it).
 */
export type Redaction = readonly string[] | ((name: string, value: unknown) => unknown);

/** What a reference to an enclosing object becomes. */
const CIRCULAR = '[circular]';

/** How deep a redacted value is searched for strings to scrub. */
const MAX_SECRET_DEPTH = 16;

/** Secret strings shorter than this are not scrubbed from free text (they would mangle it). */
export const MIN_SCRUB_LENGTH = 4;

/** The properties after redaction, and the string values that were taken out. */
export interface Redacted {
  properties: Properties;
  /** Original string values that redaction replaced, to scrub from free text such as errors. */
  secrets: string[];
}

/** Applies a redaction to an entity's properties; the input is not changed. */
export function redactProperties(properties: Properties, redaction: Redaction): Redacted {
  const replace = toReplacer(redaction);
  const secrets: string[] = [];
  const walk = (value: unknown, seen: Set<object>): unknown => {
    if (Array.isArray(value)) return guard(value, seen, () => value.map((item) => walk(item, seen)));
    if (!isPlainObject(value)) return value;
    return guard(value, seen, () => {
      const out: Properties = {};
      for (const [name, original] of Object.entries(value)) {
        const replaced = replace(name, original);
        if (replaced === original) out[name] = walk(original, seen);
        else {
          out[name] = replaced;
          collectStrings(original, secrets);
        }
      }
      return out;
    });
  };
  return { properties: walk(properties, new Set()) as Properties, secrets };
}

/**
 * Replaces every occurrence of a secret in `text` with `[redacted]`. A text that was cut short when
 * it was stored (an error in `lock_err`, which ends with `… (truncated)`) may end with the start of
 * a secret the cut went through: that start (4 characters or more) is replaced too.
 */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= MIN_SCRUB_LENGTH) out = out.split(secret).join(REDACTED);
  }
  return out.endsWith(TRUNCATED) ? scrubCut(out.slice(0, -TRUNCATED.length), secrets) + TRUNCATED : out;
}

/** A text cut short: the longest start of a secret it ends with (4 characters or more) replaced by `[redacted]`. */
function scrubCut(text: string, secrets: readonly string[]): string {
  let longest = 0;
  for (const secret of secrets) {
    // Where a start of `secret` longer than any found so far could begin, nearest the end last.
    for (let at = Math.max(0, text.length - secret.length + 1); at <= text.length - Math.max(MIN_SCRUB_LENGTH, longest + 1); at++) {
      if (text.charCodeAt(at) === secret.charCodeAt(0) && secret.startsWith(text.slice(at))) {
        longest = text.length - at;
        break;
      }
    }
  }
  return longest === 0 ? text : text.slice(0, -longest) + REDACTED;
}

/**
 * An error with every secret scrubbed from its message and stack: a copy with the same prototype
 * (so `instanceof` still holds) and name, or the error itself when it carries no secret. A value
 * that is not an `Error` becomes its scrubbed text when it names a secret.
 */
export function scrubError(error: unknown, secrets: readonly string[]): unknown {
  if (secrets.length === 0) return error;
  if (!(error instanceof Error)) {
    if (typeof error !== 'string') return error;
    const text = scrub(error, secrets);
    return text === error ? error : text;
  }
  const message = scrub(error.message, secrets);
  const stack = error.stack === undefined ? undefined : scrub(error.stack, secrets);
  if (message === error.message && stack === error.stack) return error;
  const copy = Object.create(Object.getPrototypeOf(error) as object) as Error;
  Object.defineProperty(copy, 'message', { value: message, writable: true, configurable: true });
  Object.defineProperty(copy, 'stack', { value: stack, writable: true, configurable: true });
  if (error.name !== copy.name) Object.defineProperty(copy, 'name', { value: error.name, writable: true, configurable: true });
  return copy;
}

/** The secrets of an entity's properties under a redaction (none without one). */
export function secretsOf(properties: Properties, redaction: Redaction | undefined): string[] {
  return redaction ? redactProperties(properties, redaction).secrets : [];
}

/** True when a redaction option has a valid shape. */
export function isRedaction(value: unknown): value is Redaction {
  return typeof value === 'function' || (Array.isArray(value) && value.every((name) => typeof name === 'string'));
}

function toReplacer(redaction: Redaction): (name: string, value: unknown) => unknown {
  if (typeof redaction === 'function') return redaction;
  const names = new Set(redaction);
  return (name, value) => (names.has(name) ? REDACTED : value);
}

/** Walks an object unless it is its own ancestor: a cycle becomes `[circular]`. */
function guard<T>(value: object, seen: Set<object>, walk: () => T): T | string {
  if (seen.has(value)) return CIRCULAR;
  seen.add(value);
  try {
    return walk();
  } finally {
    seen.delete(value);
  }
}

/** Strings inside a redacted value (itself, or nested in arrays and plain objects). */
function collectStrings(value: unknown, into: string[], depth = 0): void {
  if (typeof value === 'string') into.push(value);
  else if (typeof value === 'number' || typeof value === 'bigint') into.push(String(value));
  else if (depth >= MAX_SECRET_DEPTH) return;
  else if (Array.isArray(value)) value.forEach((item) => collectStrings(item, into, depth + 1));
  else if (isPlainObject(value)) Object.values(value).forEach((item) => collectStrings(item, into, depth + 1));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
