// Fan-out's ends and edges on FirestoreStore against the Firestore emulator in Native mode, in a namespace of its own;
// the file starts the emulator itself (test/support/firestore-native.ts).
import { fanOutEndsSuite } from './fanout-ends-suite';
import { useFirestoreNative } from '../support/firestore-native';
import { nativeStore } from '../support/native-store';

const emulator = useFirestoreNative();

fanOutEndsSuite('the Firestore emulator in Native mode', nativeStore(emulator, 'fanend'));
