// Recurring work on the legacy Datastore emulator and on the Firestore emulator in Datastore mode,
// each store built with no option but the namespace it sweeps; each case keeps its schedules in a
// namespace of its own (`scheduleNamespace`).
import { describe } from 'node:test';
import { recurringSuite } from './recurring-suite';
import { legacyDatastore, firestoreDatastore } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';

const open = (datastore: typeof legacyDatastore) => namespacedStore(datastore, 'rec');

// The emulators' suites run side by side (each in a namespace of its own; a suite's tests one at a time).
describe('recurring work on both emulators', { concurrency: true }, () => {
  recurringSuite('the Datastore emulator', open(legacyDatastore));
  recurringSuite('the Firestore emulator in Datastore mode', open(firestoreDatastore));
});
