/**
 * A store that counts what is asked of it: every call of a method of the real store it wraps
 * (`calls`, per method in `byMethod`), and the most calls in flight at once (`most`: the calls a
 * page sends together). A seam around the store under test: nothing of the store is changed.
 */
import type { Store } from '../../src/types';

/** The wrapped store and its counters. */
export interface CountingStore {
  store: Store;
  /** Calls since the last `reset()`. */
  readonly calls: number;
  /** Calls per method since the last `reset()`. */
  readonly byMethod: ReadonlyMap<string, number>;
  /** The most calls that were in flight at once since the last `reset()`. */
  readonly most: number;
  /** The calls per method as text, by name: `read ×1, replaceIfUnchanged ×2`. */
  summary(): string;
  reset(): void;
}

/** Wraps `inner`: every method call is counted, and awaited to see how many overlap. */
export function countingStore(inner: Store): CountingStore {
  let calls = 0;
  let inFlight = 0;
  let most = 0;
  const byMethod = new Map<string, number>();
  const store = new Proxy(inner, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls += 1;
        byMethod.set(String(property), (byMethod.get(String(property)) ?? 0) + 1);
        inFlight += 1;
        most = Math.max(most, inFlight);
        let out: unknown;
        try {
          out = (value as (...a: unknown[]) => unknown).apply(target, args);
        } catch (error) {
          inFlight -= 1;
          throw error;
        }
        if (out instanceof Promise) return out.finally(() => { inFlight -= 1; });
        inFlight -= 1;
        return out;
      };
    },
  });
  return {
    store,
    get calls() { return calls; },
    get byMethod() { return byMethod; },
    get most() { return most; },
    summary: () => [...byMethod].sort(([a], [b]) => a.localeCompare(b)).map(([name, n]) => `${name} ×${n}`).join(', '),
    reset() { calls = 0; most = 0; byMethod.clear(); },
  };
}
