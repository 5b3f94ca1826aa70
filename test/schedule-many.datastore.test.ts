// locker.scheduleMany() on the legacy Datastore emulator (conditional commits with baseVersion) and
// on the Firestore emulator in Datastore mode (which ignores baseVersion: batches in transactions),
// each with a store built with no option but the namespace it sweeps.
import { scheduleManySuite } from './schedule-many-suite';
import { DatastoreStore } from '../src/store/datastore';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from './support/emulator';

const open = (datastore: () => ReturnType<typeof legacyDatastore>) => async () => {
  const namespace = uniqueNamespace('bulk');
  const store = new DatastoreStore(datastore(), { namespaces: [namespace] });
  return { store, namespace, close: () => store.shutdown() };
};

scheduleManySuite('the Datastore emulator', open(legacyDatastore));
scheduleManySuite('the Firestore emulator in Datastore mode', open(firestoreDatastore));
