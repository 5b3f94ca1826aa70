/**
 * How Datastore's failures become the store's errors: contention (gRPC ABORTED, a lock timeout
 * under pessimistic concurrency) is a `ContentionError`, retried by the caller; every other
 * failure to reach or use Datastore is a `StoreUnavailableError`. The original error is the cause.
 */
import { ContentionError, LockerError, StoreUnavailableError } from '../errors';
import { grpcCode } from '../grpc-status';

export { grpcCode };

/** gRPC status ABORTED: the transaction lost to another one (or waited too long for a lock). */
const ABORTED = 10;
const CONTENTION_MESSAGE = /transaction lock timeout|too much contention/i;

/** True for the errors that mean "another transaction touched the same entity". */
export function isContention(error: unknown): boolean {
  if (error instanceof ContentionError) return true;
  const message = error instanceof Error ? error.message : String(error);
  return grpcCode(error) === ABORTED || CONTENTION_MESSAGE.test(message);
}

/** The store error for a failed Datastore `operation` (errors of this library pass unchanged). */
export function toStoreError(operation: string, error: unknown): LockerError {
  if (error instanceof LockerError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (isContention(error)) {
    return new ContentionError(`Datastore ${operation} aborted on contention: ${message}`, { cause: error });
  }
  return new StoreUnavailableError(`Datastore ${operation} failed: ${message}`, { cause: error });
}

/** Runs one Datastore call and maps its failure with {@link toStoreError}. */
export async function call<T>(operation: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toStoreError(operation, error);
  }
}
