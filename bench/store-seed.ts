/**
 * Seeding through a store's own port, for the parts that run on any store (`against-limit.ts`):
 * steps written in transactions of the store (`put`, and `putLedger` for their records), so the
 * same code seeds Datastore and Firestore in Native mode. A Datastore transaction writes at most
 * 25 entity groups, so each writes a few, many at once. Untimed.
 */
import type { Key } from '@google-cloud/datastore';
import { taskName } from '../src/rules/ledger-record';
import type { LedgerRecord, Store } from '../src/types';
import { BENCH_CHAIN, EXCLUDED, scheduledStep } from './entities';

/** Entities written per transaction (a Datastore transaction spans at most 25 entity groups). */
const PER_TRANSACTION = 24;

/** Transactions in flight at once. */
const CONCURRENCY = 16;

/** Runs `write` on each slice of `keys` of `size`, {@link CONCURRENCY} at a time. */
async function inSlices(keys: readonly Key[], size: number, write: (slice: readonly Key[]) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < keys.length) {
      const start = next;
      next += size;
      await write(keys.slice(start, start + size));
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

/** Scheduled steps, free, with no ledger record (as `seededSteps` leaves them on Datastore). */
export async function seedSteps(store: Store, keys: readonly Key[]): Promise<void> {
  const now = new Date();
  await inSlices(keys, PER_TRANSACTION, (slice) =>
    store.transaction(async (tx) => {
      for (const key of slice) tx.put(key, scheduledStep(1, now), EXCLUDED);
    }));
}

/** Scheduled steps as `schedule()` leaves them, each with its ledger record (as `seedWithRecords` on Datastore). */
export async function seedStepsWithRecords(store: Store, keys: readonly Key[]): Promise<void> {
  const now = new Date();
  const due = new Date(now.getTime() + 3_600_000);
  await inSlices(keys, PER_TRANSACTION / 2, (slice) =>
    store.transaction(async (tx) => {
      for (const key of slice) {
        const id = taskName(key, BENCH_CHAIN, 1);
        tx.put(key, { ...scheduledStep(1, now), lock_chain: BENCH_CHAIN, lock_task: id }, EXCLUDED);
        const record: LedgerRecord = { id, key, seq: 1, chain: BENCH_CHAIN, path: '/task', body: '', createdAt: now, task: id, sends: 1, sentAt: now, failures: 0, due };
        tx.putLedger(record);
      }
    }));
}
