// handle() under store faults against the legacy Datastore emulator and the Firestore emulator in
// Datastore mode, each behind the fault-injecting wrapper.
import { faultSuite } from './fault-suite';
import { DatastoreStore } from '../src/store/datastore';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from './support/emulator';

faultSuite('the Datastore emulator', async () => ({ store: new DatastoreStore(legacyDatastore()), namespace: uniqueNamespace('faults') }));
faultSuite('the Firestore emulator in Datastore mode', async () => ({
  // As in handle.datastore.test.ts: the emulator's own settings.
  store: new DatastoreStore(firestoreDatastore(), { beginWithFirstRead: false, conditionalWrites: false }),
  namespace: uniqueNamespace('faults'),
}));
