// handle() under store faults on FirestoreStore against the Firestore emulator in Native mode,
// behind the fault-injecting wrapper; the file starts the emulator itself (test/support/firestore-native.ts).
import { faultSuite } from './fault-suite';
import { FirestoreKeyStore } from '../../src/store/firestore/store';
import { uniqueNamespace } from '../support/emulator';
import { NATIVE_EMULATOR_OPTIONS, useFirestoreNative } from '../support/firestore-native';

const emulator = useFirestoreNative();

faultSuite('the Firestore emulator in Native mode', async () => {
  const namespace = uniqueNamespace('faults');
  return { store: new FirestoreKeyStore(emulator.client(), { ...NATIVE_EMULATOR_OPTIONS, namespaces: [namespace], projectId: 'locker-native' }), namespace };
});
