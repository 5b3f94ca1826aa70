/**
 * How Datastore's failures become the store's errors, decided once, where they enter (every RPC
 * goes through {@link call}); everything above reacts to the class, never to a code or a message:
 *
 * - contention: ABORTED, a lock timeout under locking reads, a transaction the server dropped
 *   meanwhile → `ContentionError` (the caller retries the whole read-check-write);
 * - transient: UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED, CANCELLED, UNKNOWN, a
 *   refused or reset connection, the call's deadline → `StoreUnavailableError` (retry later);
 * - permanent for this write: INVALID_ARGUMENT, OUT_OF_RANGE (an entity too large, too many index
 *   entries, a value the server refuses) → `StoreRejectedError` (sending it again fails again);
 * - configuration: PERMISSION_DENIED, UNAUTHENTICATED, NOT_FOUND (the database), FAILED_PRECONDITION
 *   (a missing index), UNIMPLEMENTED, no project id → `StoreConfigError`, whose message says what
 *   to fix.
 *
 * The original error is the cause.
 */
import { ContentionError, LockerError, StoreConfigError, StoreRejectedError, StoreUnavailableError } from '../../errors/errors';
import { grpcCode } from '../../errors/grpc-status';

export { grpcCode };

/** gRPC status codes the classification reads. */
const Code = {
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

const CONTENTION_MESSAGE = /transaction lock timeout|too much contention|transaction (has )?expired|no longer valid/i;

/** What an operator must do about each configuration error. */
const CONFIG_FIXES: ReadonlyMap<number, string> = new Map([
  [Code.PERMISSION_DENIED, 'grant the service account the Cloud Datastore User role (roles/datastore.user) on the project'],
  [Code.UNAUTHENTICATED, 'check the credentials (GOOGLE_APPLICATION_CREDENTIALS, the service account) the Datastore client uses'],
  [Code.NOT_FOUND, "check the Datastore client's projectId and databaseId: the database does not exist"],
  [Code.FAILED_PRECONDITION, 'create the index the message names (index.yaml, `gcloud datastore indexes create`)'],
  [Code.UNIMPLEMENTED, 'point the Datastore client at Firestore in Datastore mode or a Datastore emulator'],
]);

const REJECTED: ReadonlySet<number> = new Set<number>([Code.INVALID_ARGUMENT, Code.OUT_OF_RANGE]);

/** True for the errors that mean "another transaction touched the same entity". */
export function isContention(error: unknown): boolean {
  if (error instanceof ContentionError) return true;
  const message = error instanceof Error ? error.message : String(error);
  return grpcCode(error) === Code.ABORTED || CONTENTION_MESSAGE.test(message);
}

/** The store error for a failed Datastore `operation` (errors of this library pass unchanged). */
export function toStoreError(operation: string, error: unknown): LockerError {
  if (error instanceof LockerError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = grpcCode(error);
  if (isContention(error)) {
    return new ContentionError(`Datastore ${operation} aborted on contention: ${message}`, { cause: error });
  }
  if (code !== undefined && REJECTED.has(code)) {
    return new StoreRejectedError(`Datastore refused the ${operation}: ${message}`, { cause: error });
  }
  const fix = code === undefined ? undefined : CONFIG_FIXES.get(code);
  if (fix) return new StoreConfigError(`Datastore ${operation} failed: ${message}. To fix: ${fix}`, { cause: error });
  if (operation === 'project id lookup') {
    const hint = 'give the Datastore client a projectId (or set DATASTORE_PROJECT_ID / GOOGLE_CLOUD_PROJECT)';
    return new StoreConfigError(`Datastore ${operation} failed: ${message}. To fix: ${hint}`, { cause: error });
  }
  return new StoreUnavailableError(`Datastore ${operation} failed: ${message}`, { cause: error });
}

/** A transient failure the store itself detected in an answer. */
export function unavailable(operation: string, reason: string): StoreUnavailableError {
  return new StoreUnavailableError(`Datastore ${operation} failed: ${reason}`);
}

/** Runs one Datastore call and maps its failure with {@link toStoreError}. */
export async function call<T>(operation: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toStoreError(operation, error);
  }
}
