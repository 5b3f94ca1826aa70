// Fan-out and fan-in on the Firestore emulator in Datastore mode, with a store that sweeps only its
// own namespace (the legacy emulator's run is fanout.legacy.test.ts; the many-children case is
// fanout-big.*.test.ts). In `npm run test:long` only, with all ten fault points: `npm test` runs the
// suite on the in-memory store and on the legacy emulator. Alone it took 175 s of CPU (2026-11-29,
// 165 s user + 11 s sys in 141 s), about a twelfth of `npm test`'s; the Firestore emulator in
// Datastore mode stays in `npm test` through the store contract, handle, promises, fan-out ends and fan-out kill suites.
import { fanOutSuite } from './fanout-suite';
import { firestoreDatastore } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';
import { pointsToRun } from '../support/test-scale';

fanOutSuite('the Firestore emulator in Datastore mode', namespacedStore(firestoreDatastore, 'fan'), pointsToRun);
