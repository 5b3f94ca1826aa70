// Fan-out and fan-in on FirestoreStore against the Firestore emulator in Native mode, with a store
// that sweeps only its own namespace; the file starts the emulator itself.
import { fanOutSuite } from './fanout-suite';
import { useFirestoreNative } from '../support/firestore-native';
import { nativeStore } from '../support/native-store';
import { pointsToRun } from '../support/test-scale';

const emulator = useFirestoreNative();

fanOutSuite('the Firestore emulator in Native mode', nativeStore(emulator, 'fan'), pointsToRun);
