// Kickoffs and fan-outs as rows on the legacy Datastore emulator and on the Firestore emulator in Datastore mode.
// The kickoff case starts 100 chains in `npm test` and 300 in `npm run test:long` (test-scale.ts).
import { describe } from 'node:test';
import { runsSuite } from './runs-suite';
import { legacyDatastore, firestoreDatastore } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';
import { scaled } from '../support/test-scale';

const open = (datastore: typeof legacyDatastore) => namespacedStore(datastore, 'runs');
const chains = scaled(100, 300);

// The emulators' suites run side by side (each in a namespace of its own; a suite's tests one at a time).
describe('kickoffs and fan-outs as rows on both emulators', { concurrency: true }, () => {
  runsSuite('the Datastore emulator', open(legacyDatastore), chains);
  runsSuite('the Firestore emulator in Datastore mode', open(firestoreDatastore), chains);
});
