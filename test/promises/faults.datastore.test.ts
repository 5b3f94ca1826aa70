// handle() under store faults against the legacy Datastore emulator and the Firestore emulator in
// Datastore mode, each behind the fault-injecting wrapper.
import { faultSuite } from './fault-suite';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from '../support/emulator';

faultSuite('the Datastore emulator', async () => ({ store: new DatastoreStore(legacyDatastore()), namespace: uniqueNamespace('faults') }));
// No store options: the store checks what the emulator supports itself.
faultSuite('the Firestore emulator in Datastore mode', async () => ({ store: new DatastoreStore(firestoreDatastore()), namespace: uniqueNamespace('faults') }));
