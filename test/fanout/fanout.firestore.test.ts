// Fan-out and fan-in on the Firestore emulator in Datastore mode, with a store that sweeps only its
// own namespace (the legacy emulator's run is fanout.legacy.test.ts; the many-children case is
// fanout-big.*.test.ts).
import { fanOutSuite } from './fanout-suite';
import { firestoreDatastore } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';
import { pointsToRun } from '../support/test-scale';

fanOutSuite('the Firestore emulator in Datastore mode', namespacedStore(firestoreDatastore, 'fan'), pointsToRun);
