/**
 * How the operator's views write a key: as `X-Lock-Key` encodes it (the status page's links and
 * forms carry it), and as the store's users write it (`KeyType.show`: `Order:"o-1"`, or a
 * document's path on a `FirestoreStore`).
 */
import type { Key } from '@google-cloud/datastore';

/** A key's two writings, for the operator's views. */
export interface KeyWriting {
  /** The key as `X-Lock-Key` encodes it. */
  encode: (key: Key) => string;
  /** The key as the store's users write it (`KeyType.show`). */
  show: (key: Key) => string;
}
