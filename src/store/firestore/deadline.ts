/**
 * The deadline of every `FirestoreStore` call (`callTimeoutMs`). The public Firestore client has
 * no per-call deadline for `get`, `getAll`, `update`, `create`, `delete`, a batch's `commit`, a
 * query's `get` or `runTransaction`: against an unreachable or hung Firestore a call waits for the
 * client's own retries, possibly minutes. So each call is raced against a timer here; when the
 * timer fires first the call is given up and its caller gets a `StoreUnavailableError` naming the
 * call and the deadline (the Locker answers the task 503 and Cloud Tasks retries it, as on
 * `DatastoreStore`'s deadline). The timer is cleared as soon as the call settles, so none keeps
 * the process alive.
 *
 * A call given up is not cancelled (the client has no way to): it may still reach Firestore, and
 * a write may still apply after its caller was told it failed. Its outcome is unknown, exactly as
 * with `DatastoreStore`'s deadline (a DEADLINE_EXCEEDED says nothing about whether the commit
 * landed). That is safe for the Locker because every write it makes is fenced: a compare-and-swap
 * at the `updateTime` it read, or a transaction that read what it writes. A late write that still
 * applies is one the Locker meant, at the version it was based on; the retried task reads the
 * document again and finds the step taken or finished (a finishing write retried after an applied
 * one finds the step finished), and a write that would undo a newer one is refused by its
 * precondition. A ledger record written by a late write names a step its entity runs, or one the
 * sweep clears. Transactions bound their commit the same way, and never send a commit once given
 * up (`store.ts`, `transaction()`).
 */
import { ConfigError, StoreUnavailableError } from '../../errors/errors';

/** The default of `FirestoreStoreOptions.callTimeoutMs`, ms. */
export const DEFAULT_CALL_TIMEOUT_MS = 5_000;

/** `callTimeoutMs` checked: a positive integer of milliseconds. */
export function checkCallTimeout(ms: unknown): number {
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms <= 0) {
    throw new ConfigError(`FirestoreStore: callTimeoutMs must be a positive integer of milliseconds; got ${typeof ms === 'string' ? JSON.stringify(ms) : String(ms)}`);
  }
  return ms;
}

/** The error of a call to Firestore that did not end within `timeoutMs`. */
export function deadlineError(operation: string, timeoutMs: number, outcome = 'it was given up (a write may still apply)'): StoreUnavailableError {
  return new StoreUnavailableError(`Firestore ${operation} did not answer within callTimeoutMs (${timeoutMs} ms): ${outcome}`);
}

/**
 * What `run()` resolves to, or a {@link deadlineError} when it has not settled within `timeoutMs`.
 * Its own failure passes unchanged (the caller classifies it); a failure after the deadline is
 * dropped (its caller already has its error).
 */
export function withDeadline<T>(operation: string, timeoutMs: number, run: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(deadlineError(operation, timeoutMs)), timeoutMs);
    let running: Promise<T>;
    try {
      running = run();
    } catch (error) {
      clearTimeout(timer);
      reject(error);
      return;
    }
    running.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
