// handle() and chaining against the legacy Datastore emulator (optimistic transactions) and the
// Firestore emulator in Datastore mode (locking reads, as production is).
import { describe } from 'node:test';
import { handleSuite } from './handle-suite';
import { chainSuite } from '../chain/chain-suite';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from '../support/emulator';

// Each store sweeps only its own namespace: other suites' ledger records stay out of its sweeps.
const legacy = async () => {
  const namespace = uniqueNamespace('handle');
  return { store: new DatastoreStore(legacyDatastore(), { namespaces: [namespace] }), namespace };
};
// No other store option: the store finds out itself that the Firestore emulator ignores baseVersion and
// leaves keys read by a transaction's first read locked (see datastore-backend.ts).
const firestore = async () => {
  const namespace = uniqueNamespace('handle');
  return { store: new DatastoreStore(firestoreDatastore(), { namespaces: [namespace] }), namespace };
};

// The emulators' suites run side by side (each in a namespace of its own; a suite's tests one at a time).
describe('handle() and chaining on both emulators', { concurrency: true }, () => {
  handleSuite('the Datastore emulator', legacy);
  chainSuite('the Datastore emulator', legacy);
  handleSuite('the Firestore emulator in Datastore mode', firestore);
  chainSuite('the Firestore emulator in Datastore mode', firestore);
});
