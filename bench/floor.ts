/**
 * The raw floor: one read-write transaction with the plain client, as an application would write
 * it without the library (begin, lookup, save, commit), on an entity shaped like a step's. Each of
 * its three round trips is timed too, to show where a step's time goes.
 */
import { performance } from 'node:perf_hooks';
import type { Datastore, Key } from '@google-cloud/datastore';
import { EXCLUDED } from './entities';

/** Milliseconds of each round trip of one raw transaction. */
export interface FloorPhases {
  begin: number;
  lookup: number;
  commit: number;
}

/** Runs one raw transaction that reads `key` and writes it back with its lease taken. */
export async function rawTransaction(datastore: Datastore, key: Key): Promise<FloorPhases> {
  const tx = datastore.transaction();
  const t0 = performance.now();
  await tx.run();
  const t1 = performance.now();
  const [entity] = (await tx.get(key)) as [Record<string, unknown> | undefined];
  const t2 = performance.now();
  tx.save({ key, data: { ...entity, lock_req: 'raw', lock_ts: new Date() }, excludeFromIndexes: EXCLUDED });
  await tx.commit();
  return { begin: t1 - t0, lookup: t2 - t1, commit: performance.now() - t2 };
}
