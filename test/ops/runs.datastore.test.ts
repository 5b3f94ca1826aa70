// Kickoffs and fan-outs as rows on the legacy Datastore emulator and on the Firestore emulator in Datastore mode.
import { describe } from 'node:test';
import { runsSuite } from './runs-suite';
import { legacyDatastore, firestoreDatastore } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';

const open = (datastore: typeof legacyDatastore) => namespacedStore(datastore, 'runs');

// The emulators' suites run side by side (each in a namespace of its own; a suite's tests one at a time).
describe('kickoffs and fan-outs as rows on both emulators', { concurrency: true }, () => {
  runsSuite('the Datastore emulator', open(legacyDatastore));
  runsSuite('the Firestore emulator in Datastore mode', open(firestoreDatastore));
});
