// Kickoffs and fan-outs as rows on the legacy Datastore emulator and on the Firestore emulator in Datastore mode.
import { runsSuite } from './runs-suite';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from '../support/emulator';

const open = (datastore: () => ReturnType<typeof legacyDatastore>) => async () => {
  const namespace = uniqueNamespace('runs');
  const store = new DatastoreStore(datastore(), { namespaces: [namespace] });
  return { store, namespace, close: () => store.shutdown() };
};

runsSuite('the Datastore emulator', open(legacyDatastore));
runsSuite('the Firestore emulator in Datastore mode', open(firestoreDatastore));
