/**
 * A store wrapper that counts the calls a Locker makes, by operation (transactions, reads, lookups,
 * compare-and-swaps, queries), delegating every operation the inner store has, optional ones
 * included: a test compares what steps cost in store calls.
 */
import type { Store } from '../../src/types';

/** The inner store, counted: `summary()` says `read ×1, replaceIfUnchanged ×2` since the last `reset()`. */
export type CountingCalls = Store & { reset(): void; summary(): string };

export function countingCalls(inner: Store): CountingCalls {
  const counts = new Map<string, number>();
  const wrapper = {
    reset(): void { counts.clear(); },
    summary(): string { return [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([name, n]) => `${name} ×${n}`).join(', '); },
  };
  return new Proxy(inner, {
    get(target, name, receiver) {
      if (name === 'reset' || name === 'summary') return wrapper[name];
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== 'function' || typeof name !== 'string') return value;
      return (...args: unknown[]) => {
        counts.set(name, (counts.get(name) ?? 0) + 1);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as CountingCalls;
}
