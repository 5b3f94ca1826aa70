// The promises between features on the legacy Datastore emulator, and on the Firestore emulator in
// Datastore mode, which (unlike the legacy emulator) refuses an entity over 1 MiB as production does.
import { promisesSuite } from './promises-suite';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from '../support/emulator';

promisesSuite('the Datastore emulator', async () => {
  const namespace = uniqueNamespace('promises');
  return { store: new DatastoreStore(legacyDatastore(), { namespaces: [namespace] }), namespace };
});
promisesSuite('the Firestore emulator in Datastore mode', async () => {
  const namespace = uniqueNamespace('promises');
  return { store: new DatastoreStore(firestoreDatastore(), { namespaces: [namespace] }), namespace };
}, { oversized: true });
