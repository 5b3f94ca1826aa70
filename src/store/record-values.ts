/**
 * Reading the library's own records back (kickoff runs, schedules): a property stored as JSON
 * text, and a stored count. Each answers a harmless default for a value that is missing or not
 * what was written, so a damaged record reads as empty, never throws.
 */

/** The value a JSON text property holds; undefined when it is not a string or not JSON. */
export function storedJson(value: unknown): unknown {
  if (typeof value !== 'string') return undefined;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return undefined;
  }
}

/** A stored count: a whole number from 0; 0 for anything else. */
export function storedCount(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}
