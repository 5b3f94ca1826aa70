/**
 * Reads of several entities in one transaction, batched where the store's transaction can
 * (`StoreTransaction.getMany`), else one `get` per key, concurrently.
 */
import type { Key } from '@google-cloud/datastore';
import type { Properties, StoreTransaction } from '../types';

/** Keys a batched read takes (Datastore's lookup limit). */
const MAX_KEYS = 1_000;

/** The entities at `keys`, in order (undefined where absent). */
export async function getAll(tx: StoreTransaction, keys: readonly Key[]): Promise<(Properties | undefined)[]> {
  if (!tx.getMany) return Promise.all(keys.map((key) => tx.get(key)));
  const out: (Properties | undefined)[] = [];
  for (let i = 0; i < keys.length; i += MAX_KEYS) out.push(...(await tx.getMany(keys.slice(i, i + MAX_KEYS))));
  return out;
}
