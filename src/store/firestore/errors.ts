/**
 * How Firestore's failures become the store's errors, decided once, where they enter (every call
 * goes through {@link call}, which also bounds it by the store's deadline, `deadline.ts`), with the
 * same classes and the same contention rule as `DatastoreStore` (`../datastore/errors.ts`): ABORTED
 * and the emulator's lock timeouts are contention; UNAVAILABLE, DEADLINE_EXCEEDED and the other transient codes are unavailability;
 * a transaction the server closed meanwhile ("Transaction is invalid or closed") is contention too;
 * INVALID_ARGUMENT and OUT_OF_RANGE refuse the write for good; PERMISSION_DENIED,
 * UNAUTHENTICATED, NOT_FOUND (the database), FAILED_PRECONDITION (a missing index) and
 * UNIMPLEMENTED are set-up errors whose message says what to fix. A conditional write's own
 * refusals (FAILED_PRECONDITION, NOT_FOUND, ALREADY_EXISTS) are not errors: the store reads them
 * as "changed since it was read" ({@link isConflict}) before they get here.
 */
import { ContentionError, LockerError, StoreConfigError, StoreRejectedError, StoreUnavailableError } from '../../errors/errors';
import { grpcCode } from '../../errors/grpc-status';
import { isContention } from '../datastore/errors';
import { withDeadline } from './deadline';

const NOT_FOUND = 5;
const ALREADY_EXISTS = 6;
const FAILED_PRECONDITION = 9;

const REJECTED: ReadonlySet<number> = new Set([3, 11]);

/**
 * The emulator's answer to the commit of a transaction it closed while another writer waited for
 * its locks (INVALID_ARGUMENT, found with a compare-and-swap that waited a minute for a
 * transaction's read lock): the transaction lost, as on contention.
 */
const CLOSED_TRANSACTION = /transaction is invalid or closed/i;

/** What an operator must do about each configuration error. */
const CONFIG_FIXES: ReadonlyMap<number, string> = new Map([
  [7, 'grant the service account the Cloud Datastore User role (roles/datastore.user) on the project'],
  [16, 'check the credentials (GOOGLE_APPLICATION_CREDENTIALS, the service account) the Firestore client uses'],
  [NOT_FOUND, "check the Firestore client's projectId and databaseId: the database does not exist, or is in Datastore mode"],
  [FAILED_PRECONDITION, 'create the index the message names (FirestoreStore lists the ones it needs; `gcloud firestore indexes composite create`)'],
  [12, 'point the Firestore client at a database in Native mode or the Firestore emulator'],
]);

/** True when a conditional write was refused because the document changed, appeared or went since it was read. */
export function isConflict(error: unknown): boolean {
  const code = grpcCode(error);
  return code === FAILED_PRECONDITION || code === NOT_FOUND || code === ALREADY_EXISTS;
}

/** The store error for a failed Firestore `operation` (errors of this library pass unchanged). */
export function toStoreError(operation: string, error: unknown): LockerError {
  if (error instanceof LockerError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = grpcCode(error);
  if (isContention(error) || CLOSED_TRANSACTION.test(message)) return new ContentionError(`Firestore ${operation} aborted on contention: ${message}`, { cause: error });
  if (code !== undefined && REJECTED.has(code)) return new StoreRejectedError(`Firestore refused the ${operation}: ${message}`, { cause: error });
  const fix = code === undefined ? undefined : CONFIG_FIXES.get(code);
  if (fix) return new StoreConfigError(`Firestore ${operation} failed: ${message}. To fix: ${fix}`, { cause: error });
  return new StoreUnavailableError(`Firestore ${operation} failed: ${message}`, { cause: error });
}

/**
 * Runs one Firestore call within `timeoutMs` (`withDeadline`: past it, a `StoreUnavailableError`,
 * the call given up) and maps its failure with {@link toStoreError}.
 */
export async function call<T>(operation: string, timeoutMs: number, run: () => Promise<T>): Promise<T> {
  try {
    return await withDeadline(operation, timeoutMs, run);
  } catch (error) {
    throw toStoreError(operation, error);
  }
}
