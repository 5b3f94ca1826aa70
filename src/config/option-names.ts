/**
 * Unknown option names. Every options object the library takes is checked against the names it
 * knows, so a misspelt option is a `ConfigError` that names it and the closest known option
 * ("did you mean leaseDuration?") instead of a setting silently left at its default.
 */
import { ConfigError } from '../errors/errors';

/**
 * Every option name of `T`, each mapped to `true`. A literal of this type lists every option of
 * `T` (optional ones included) and nothing else, so the list cannot fall behind the interface.
 */
export type OptionNames<T> = { readonly [K in keyof Required<T>]: true };

/** An unknown name farther than this from every known one gets the list of known names too. */
const FAR = 3;

/**
 * Throws `ConfigError` when `options` has an own key that `known` does not list, e.g.
 * "Locker: unknown option `leaseDuraton`; did you mean `leaseDuration`?". `path` prefixes nested
 * options (`contention.`). Anything that is not an object is left to the caller's own checks.
 */
export function rejectUnknownOptions<T>(owner: string, options: T, known: OptionNames<T>, path = ''): void {
  if (typeof options !== 'object' || options === null) return;
  for (const name of Object.keys(options)) {
    if (!Object.prototype.hasOwnProperty.call(known, name)) {
      throw new ConfigError(unknownOptionMessage(owner, path, name, Object.keys(known)));
    }
  }
}

/** The sentence for an unknown option `name` among `known` ones. */
export function unknownOptionMessage(owner: string, path: string, name: string, known: readonly string[]): string {
  const { best, distance } = closest(name, known);
  const list = distance > FAR ? ` Known options: ${known.map((k) => `${path}${k}`).join(', ')}.` : '';
  return `${owner}: unknown option \`${path}${name}\`; did you mean \`${path}${best}\`?${list}`;
}

/** The known name nearest to `name` (case ignored, then case counted to break ties). */
export function closest(name: string, known: readonly string[]): { best: string; distance: number } {
  let best = { best: known[0] ?? '', distance: Infinity, exact: Infinity };
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    const exact = editDistance(name, candidate);
    if (distance < best.distance || (distance === best.distance && exact < best.exact)) best = { best: candidate, distance, exact };
  }
  return { best: best.best, distance: best.distance };
}

/**
 * The optimal string alignment distance: insertions, deletions, substitutions and swaps of two
 * neighbouring characters each cost one.
 */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i]!;
    const above = rows[i - 1]!;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(above[j]! + 1, row[j - 1]! + 1, above[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, rows[i - 2]![j - 2]! + 1);
    }
  }
  return rows[a.length]![b.length]!;
}
