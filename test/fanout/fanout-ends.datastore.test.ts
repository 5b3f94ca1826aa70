// Fan-out's ends and edges (issue 37: defects 3, 4, 8 and the suspected cases) on the legacy
// Datastore emulator and on the Firestore emulator in Datastore mode, each in a namespace of its own.
import { fanOutEndsSuite } from './fanout-ends-suite';
import { legacyDatastore, firestoreDatastore } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';

const open = (datastore: typeof legacyDatastore) => namespacedStore(datastore, 'fanend');

fanOutEndsSuite('the Datastore emulator', open(legacyDatastore));
fanOutEndsSuite('the Firestore emulator in Datastore mode', open(firestoreDatastore));
