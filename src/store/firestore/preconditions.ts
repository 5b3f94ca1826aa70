/**
 * Knowing the backend, as `DatastoreStore` does (`../datastore/backend.ts`): before its first
 * compare-and-swap a `FirestoreStore` checks once that the database refuses a write whose
 * `lastUpdateTime` precondition is stale, instead of trusting documentation. It creates a scratch
 * document of its own (`LockerProbe/precondition-<random>`, default namespace), updates it at the
 * `updateTime` written (must apply), updates it again at that now stale time (must be refused),
 * and deletes it. A backend that applies the stale write would let two attempts both believe they
 * hold a lease: the store then refuses every compare-and-swap with a `StoreConfigError` (there is
 * no transactional fallback: Firestore in Native mode, and its emulator, honour preconditions). A
 * check that fails for another reason (the backend unreachable) fails the operation that needed
 * it, and runs again next time. So does a check whose create or fresh update is refused as a
 * conflict (ALREADY_EXISTS, FAILED_PRECONDITION): the client sends a commit again on UNAVAILABLE,
 * so a write that applied and whose answer was lost (a dropped connection) comes back refused by
 * its own first send; that is a store fault, a `StoreUnavailableError`, not a finding about the
 * backend (the chaos run on Native mode found it read as a missing index, for good).
 */
import { randomBytes } from 'node:crypto';
import type { Firestore } from '@google-cloud/firestore';
import { StoreConfigError, StoreUnavailableError } from '../../errors/errors';
import { withDeadline } from './deadline';
import { isConflict, toStoreError } from './errors';

/** The collection of the scratch documents: no user kind, never read by the library's queries. */
export const PROBE_COLLECTION = 'LockerProbe';

/** Resolves when a stale `lastUpdateTime` precondition is refused; a `StoreConfigError` when it is not. */
export async function checkPreconditions(firestore: Firestore, timeoutMs: number): Promise<void> {
  const ref = firestore.collection(PROBE_COLLECTION).doc(`precondition-${randomBytes(12).toString('hex')}`);
  const created = await mustApply(timeoutMs, () => ref.create({ step: 0 }));
  try {
    const fresh = await mustApply(timeoutMs, () => ref.update({ step: 1 }, { lastUpdateTime: created.writeTime }));
    let staleApplied = false;
    try {
      await withDeadline('precondition check', timeoutMs, () => ref.update({ step: 2 }, { lastUpdateTime: created.writeTime }));
      staleApplied = true;
    } catch (error) {
      if (!isConflict(error)) throw toStoreError('precondition check', error);
    }
    if (staleApplied || fresh.writeTime.isEqual(created.writeTime)) {
      throw new StoreConfigError(
        'Firestore applied a write whose lastUpdateTime precondition was stale: FirestoreStore cannot fence leases on this backend. ' +
          'To fix: use a Firestore database in Native mode (or its emulator); a Datastore-mode database takes DatastoreStore',
      );
    }
  } finally {
    await withDeadline('precondition check', timeoutMs, () => ref.delete()).catch(() => undefined);
  }
}

/**
 * One of the check's writes that must apply: refused as a conflict, it is a write the client sent
 * again after it had applied (its answer lost), so the check could not finish: unavailable, not a
 * finding (see the file's comment).
 */
async function mustApply<T>(timeoutMs: number, write: () => Promise<T>): Promise<T> {
  try {
    return await withDeadline('precondition check', timeoutMs, write);
  } catch (error) {
    if (isConflict(error)) {
      const message = error instanceof Error ? error.message : String(error);
      throw new StoreUnavailableError(`Firestore precondition check could not finish: its own scratch write was refused as a conflict, a write sent again after it applied: ${message}`, { cause: error });
    }
    throw toStoreError('precondition check', error);
  }
}
