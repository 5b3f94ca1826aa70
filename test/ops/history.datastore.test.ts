// A chain's history stored on the legacy Datastore emulator and the Firestore emulator in Datastore mode.
import { historySuite } from './history-suite';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from '../support/emulator';

historySuite('the Datastore emulator', async () => {
  const namespace = uniqueNamespace('history');
  return { store: new DatastoreStore(legacyDatastore(), { namespaces: [namespace] }), namespace };
});
historySuite('the Firestore emulator in Datastore mode', async () => {
  const namespace = uniqueNamespace('history');
  return { store: new DatastoreStore(firestoreDatastore(), { namespaces: [namespace] }), namespace };
});
