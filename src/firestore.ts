/**
 * `datastore-locker/firestore`: the store for a Firestore database in Native mode. An entry of its
 * own, so that `datastore-locker` itself never loads `@google-cloud/firestore`, an optional peer that
 * only the users of this store install.
 *
 * ```ts
 * import { Firestore } from '@google-cloud/firestore';
 * import { Locker } from 'datastore-locker';
 * import { FirestoreStore } from 'datastore-locker/firestore';
 *
 * const locker = new Locker({ store: new FirestoreStore(new Firestore()) });
 * ```
 * @module
 */
export { FirestoreStore, type FirestoreStoreOptions } from './store/firestore/store';
export {
  firestoreIndexes, type FirestoreIndexes, type FirestoreCompositeIndex, type FirestoreFieldOverride, type FirestoreFieldIndex,
  type FirestoreIndexField, type FirestoreIndexOrder, type FirestoreQueryScope,
} from './store/firestore/indexes';
