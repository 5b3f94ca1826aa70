// A migration from the Go library against the legacy Datastore emulator and the Firestore
// emulator in Datastore mode.
import { goSuite } from './go-suite';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from '../support/emulator';

goSuite('the Datastore emulator', async () => ({ store: new DatastoreStore(legacyDatastore()), namespace: uniqueNamespace('go') }));
goSuite('the Firestore emulator in Datastore mode', async () => ({
  store: new DatastoreStore(firestoreDatastore()), // no options: the store probes the backend
  namespace: uniqueNamespace('go'),
}));
