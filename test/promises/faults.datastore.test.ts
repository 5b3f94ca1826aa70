// handle() under store faults against the legacy Datastore emulator and the Firestore emulator in
// Datastore mode, each behind the fault-injecting wrapper.
import { describe } from 'node:test';
import { faultSuite } from './fault-suite';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from '../support/emulator';

// The emulators' suites run side by side (each in a namespace of its own; a suite's tests one at a time).
describe('handle() under store faults on both emulators', { concurrency: true }, () => {
  faultSuite('the Datastore emulator', async () => ({ store: new DatastoreStore(legacyDatastore()), namespace: uniqueNamespace('faults') }));
  // No store options: the store checks what the emulator supports itself.
  faultSuite('the Firestore emulator in Datastore mode', async () => ({ store: new DatastoreStore(firestoreDatastore()), namespace: uniqueNamespace('faults') }));
});
