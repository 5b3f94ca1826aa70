/**
 * A store wrapper for crash-test apps (diagnostics only, never in the code under test): it
 * forwards every call to the real store and keeps the calls not yet answered (a transaction's
 * own reads included), so the app can print what has been waiting too long.
 */
import type { Store } from '../../src/types';

/** One call not yet answered. */
export interface PendingCall {
  what: string;
  since: number;
}

function describe(args: unknown[]): string {
  const first = args[0] as { kind?: string; name?: string; path?: unknown[] } | unknown[] | undefined;
  if (Array.isArray(first)) return `${first.length} items`;
  if (first && typeof first === 'object' && 'path' in first && Array.isArray(first.path)) return first.path.join('/');
  return '';
}

/** Wraps `inner`; `pending` holds the calls in flight. */
export function inflightStore<S extends Store>(inner: S): { store: S; pending: Set<PendingCall> } {
  const pending = new Set<PendingCall>();
  const track = <T>(what: string, run: () => T): T => {
    const result = run();
    if (result instanceof Promise) {
      const call = { what, since: Date.now() };
      pending.add(call);
      void result.then(() => pending.delete(call), () => pending.delete(call));
    }
    return result;
  };
  const wrap = <O extends object>(target: O, prefix: string): O => new Proxy(target, {
    get(t, prop, receiver) {
      const value = Reflect.get(t, prop, receiver) as unknown;
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      if (prop === 'transaction') {
        return (fn: (tx: object) => Promise<unknown>) => track(`${prefix}transaction`, () => (value as (f: typeof fn) => Promise<unknown>).call(t, (tx) => fn(wrap(tx, 'tx.'))));
      }
      return (...args: unknown[]) => track(`${prefix}${prop}(${describe(args)})`, () => (value as (...a: unknown[]) => unknown).apply(t, args));
    },
  });
  return { store: wrap(inner, ''), pending };
}
