// Bulk operations on the legacy Datastore emulator and on the Firestore emulator in Datastore
// mode, each with a store that sweeps the namespace of the test (where an operation's record and
// its ledger records live: its targets' namespace).
import { bulkSuite } from './bulk-suite';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from '../support/emulator';

const open = (datastore: () => ReturnType<typeof legacyDatastore>) => async () => {
  const namespace = uniqueNamespace('bulkop');
  const store = new DatastoreStore(datastore(), { namespaces: [namespace] });
  return { store, namespace, close: () => store.shutdown() };
};

bulkSuite('the Datastore emulator', open(legacyDatastore));
bulkSuite('the Firestore emulator in Datastore mode', open(firestoreDatastore));
