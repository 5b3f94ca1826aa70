// Fan-out's ends and edges (issue 37: defects 3, 4, 8 and the suspected cases) on the legacy
// Datastore emulator and on the Firestore emulator in Datastore mode, each in a namespace of its own.
import { fanOutEndsSuite } from './fanout-ends-suite';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from '../support/emulator';

const open = (datastore: () => ReturnType<typeof legacyDatastore>) => async () => {
  const namespace = uniqueNamespace('fanend');
  const store = new DatastoreStore(datastore(), { namespaces: [namespace] });
  return { store, namespace, close: () => store.shutdown() };
};

fanOutEndsSuite('the Datastore emulator', open(legacyDatastore));
fanOutEndsSuite('the Firestore emulator in Datastore mode', open(firestoreDatastore));
