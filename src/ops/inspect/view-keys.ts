/**
 * The operator's views with the store's own keys: every `key` of a view (the step's, a fan-out's
 * parent, its children, a run's oldest pending chain) turned from the `Key` the Inspector reads
 * into the store's key type (`KeyType.fromKey`: a `DocumentReference` on a `FirestoreStore`).
 * Everything else is kept as it is: the `keyPath`s were already written by the key type's `show`.
 */
import type { Key } from '@google-cloud/datastore';
import type { FanOutView } from '../../fanout/view';
import type { FanOutRow, KickoffRow } from './runs';

/** A `Key` turned into the store's key. */
export type FromKey<K> = (key: Key) => K;

/** A view that names one entity (a step, a fan-out's parent or child, a run's oldest pending chain) with its key as `K`. */
export function withKey<K, V extends { key: Key }>(view: V, from: FromKey<K>): Omit<V, 'key'> & { key: K } {
  return { ...view, key: from(view.key) };
}

/** A kickoff row with its oldest pending chain's key as `K`. */
export function kickoffRowWith<K>(row: KickoffRow, from: FromKey<K>): KickoffRow<K> {
  const { oldestPending, ...rest } = row;
  return { ...rest, ...(oldestPending && { oldestPending: withKey(oldestPending, from) }) };
}

/** A fan-out row with its parent's and its oldest pending child's keys as `K`. */
export function fanOutRowWith<K>(row: FanOutRow, from: FromKey<K>): FanOutRow<K> {
  const { oldestPending, parent, ...rest } = row;
  return { ...rest, parent: withKey(parent, from), ...(oldestPending && { oldestPending: withKey(oldestPending, from) }) };
}

/** A fan-out's view with its children's keys as `K`. */
export function fanOutViewWith<K>(view: FanOutView, from: FromKey<K>): FanOutView<K> {
  const { oldestPending, failures, ...rest } = view;
  return { ...rest, failures: failures.map((f) => withKey(f, from)), ...(oldestPending && { oldestPending: withKey(oldestPending, from) }) };
}
