// Kickoffs and fan-outs as rows on the legacy Datastore emulator and on the Firestore emulator in Datastore mode.
import { runsSuite } from './runs-suite';
import { legacyDatastore, firestoreDatastore } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';

const open = (datastore: typeof legacyDatastore) => namespacedStore(datastore, 'runs');

runsSuite('the Datastore emulator', open(legacyDatastore));
runsSuite('the Firestore emulator in Datastore mode', open(firestoreDatastore));
