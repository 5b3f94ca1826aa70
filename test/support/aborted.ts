/**
 * Waiting in a test handler for its step's signal to abort. An 'abort' listener added to a signal
 * that is already aborted never fires, so a handler that does something first (writes a thief's
 * lease, calls `ctx.complete()`) and only then listens hangs for good when the Locker was quicker
 * (found 2026-11-29: `handle.datastore.test.ts` ran until the runner killed it at 20 minutes, on a
 * machine at load 18). `aborted()` resolves at once then.
 */

/** Resolves with the signal's reason once it is aborted: at once when it already is. */
export function aborted(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}
