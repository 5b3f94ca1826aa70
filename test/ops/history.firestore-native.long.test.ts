// A chain's history on FirestoreStore against the Firestore emulator in Native mode, in a namespace of its own;
// the file starts the emulator itself (test/support/firestore-native.ts).
import { historySuite } from './history-suite';
import { useFirestoreNative } from '../support/firestore-native';
import { nativeStore } from '../support/native-store';

const emulator = useFirestoreNative();

historySuite('the Firestore emulator in Native mode', nativeStore(emulator, 'history'));
