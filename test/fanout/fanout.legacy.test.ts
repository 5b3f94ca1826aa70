// Fan-out and fan-in on the legacy Datastore emulator, with a store that sweeps only its own
// namespace (the Firestore emulator's run is fanout.firestore.long.test.ts, in `npm run test:long` only; the many-children case is fanout-big.*.test.ts).
import { fanOutSuite } from './fanout-suite';
import { legacyDatastore } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';
import { pointsToRun } from '../support/test-scale';

fanOutSuite('the Datastore emulator', namespacedStore(legacyDatastore, 'fan'), pointsToRun);
