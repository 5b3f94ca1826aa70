// handle() and chaining on FirestoreStore against the Firestore emulator in Native mode (locking
// reads, as the service has), which this file starts itself (test/support/firestore-native.ts).
import { describe } from 'node:test';
import { handleSuite } from './handle-suite';
import { chainSuite } from '../chain/chain-suite';
import { FirestoreKeyStore } from '../../src/store/firestore/store';
import { uniqueNamespace } from '../support/emulator';
import { NATIVE_EMULATOR_OPTIONS, useFirestoreNative } from '../support/firestore-native';

const emulator = useFirestoreNative();

// The store sweeps only its own namespace: the other suite's ledger records stay out of its sweeps.
const native = async () => {
  const namespace = uniqueNamespace('handle');
  return { store: new FirestoreKeyStore(emulator.client(), { ...NATIVE_EMULATOR_OPTIONS, namespaces: [namespace], projectId: 'locker-native' }), namespace };
};

describe('handle() and chaining on the Firestore emulator in Native mode', { concurrency: true }, () => {
  handleSuite('the Firestore emulator in Native mode', native);
  chainSuite('the Firestore emulator in Native mode', native);
});
