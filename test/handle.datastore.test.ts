// handle() and chaining against the legacy Datastore emulator (optimistic transactions) and the
// Firestore emulator in Datastore mode (locking reads, as production is).
import { handleSuite } from './handle-suite';
import { chainSuite } from './chain-suite';
import { DatastoreStore } from '../src/store/datastore';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from './support/emulator';

const legacy = async () => ({ store: new DatastoreStore(legacyDatastore()), namespace: uniqueNamespace('handle') });
// No store options: the store finds out itself that the Firestore emulator ignores baseVersion and
// leaves keys read by a transaction's first read locked (see datastore-backend.ts).
const firestore = async () => ({ store: new DatastoreStore(firestoreDatastore()), namespace: uniqueNamespace('handle') });

handleSuite('the Datastore emulator', legacy);
chainSuite('the Datastore emulator', legacy);
handleSuite('the Firestore emulator in Datastore mode', firestore);
chainSuite('the Firestore emulator in Datastore mode', firestore);
