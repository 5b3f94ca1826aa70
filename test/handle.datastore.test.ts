// handle() and chaining against the legacy Datastore emulator (optimistic transactions) and the
// Firestore emulator in Datastore mode (locking reads, as production is).
import { handleSuite } from './handle-suite';
import { chainSuite } from './chain-suite';
import { DatastoreStore } from '../src/store/datastore';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from './support/emulator';

const legacy = async () => ({ store: new DatastoreStore(legacyDatastore()), namespace: uniqueNamespace('handle') });
const firestore = async () => ({
  // The Firestore emulator ignores baseVersion (production honours it), so compare-and-swap runs as a transaction there.
  store: new DatastoreStore(firestoreDatastore(), { beginWithFirstRead: false, conditionalWrites: false }),
  namespace: uniqueNamespace('handle'),
});

handleSuite('the Datastore emulator', legacy);
chainSuite('the Datastore emulator', legacy);
handleSuite('the Firestore emulator in Datastore mode', firestore);
chainSuite('the Firestore emulator in Datastore mode', firestore);
