/** Options given as `undefined` count as not given: defaults apply to them. */

/** A copy of `value` without its keys whose value is `undefined`. */
export function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
