// Bulk operations on the legacy Datastore emulator and on the Firestore emulator in Datastore
// mode, each with a store that sweeps the namespace of the test (where an operation's record and
// its ledger records live: its targets' namespace).
import { bulkSuite } from './bulk-suite';
import { legacyDatastore, firestoreDatastore } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';

const open = (datastore: typeof legacyDatastore) => namespacedStore(datastore, 'bulkop');

bulkSuite('the Datastore emulator', open(legacyDatastore));
bulkSuite('the Firestore emulator in Datastore mode', open(firestoreDatastore));
