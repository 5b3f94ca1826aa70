/**
 * How deeply a task's JSON may nest. Parsing runs on the event loop, where a deeply nested body
 * (a few hundred kilobytes of `[`) costs time that lease renewals of running steps wait for; a
 * payload this library schedules never nests deeper than this, since `schedule()` refuses one that
 * does. Checked on the text before it is parsed (one linear scan), and on a value a body parser in
 * front already parsed.
 */

/** The deepest nesting of arrays and objects a payload may have. */
export const MAX_JSON_DEPTH = 64;

/** Whether JSON text nests arrays and objects deeper than `max` (strings are skipped, escapes honoured). */
export function nestsDeeperThan(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Whether a parsed value nests arrays and objects deeper than `max` (walks at most `max + 1` levels). */
export function valueNestsDeeperThan(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const walk = (v: unknown, depth: number): boolean => {
    if (typeof v !== 'object' || v === null) return false;
    if (depth > max) return true;
    return (Array.isArray(v) ? v : Object.values(v)).some((item) => walk(item, depth + 1));
  };
  return walk(value, 1);
}
