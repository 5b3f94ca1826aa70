// Recurring work on the legacy Datastore emulator and on the Firestore emulator in Datastore mode,
// each store built with no option but the namespace it sweeps; each case keeps its schedules in a
// namespace of its own (`scheduleNamespace`).
import { recurringSuite } from './recurring-suite';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from '../support/emulator';

const open = (datastore: () => ReturnType<typeof legacyDatastore>) => async () => {
  const namespace = uniqueNamespace('rec');
  const store = new DatastoreStore(datastore(), { namespaces: [namespace] });
  return { store, namespace, close: () => store.shutdown() };
};

recurringSuite('the Datastore emulator', open(legacyDatastore));
recurringSuite('the Firestore emulator in Datastore mode', open(firestoreDatastore));
