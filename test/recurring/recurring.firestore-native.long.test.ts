// Recurring work on FirestoreStore against the Firestore emulator in Native mode, in a namespace of its own;
// the file starts the emulator itself (test/support/firestore-native.ts).
import { recurringSuite } from './recurring-suite';
import { useFirestoreNative } from '../support/firestore-native';
import { nativeStore } from '../support/native-store';

const emulator = useFirestoreNative();

recurringSuite('the Firestore emulator in Native mode', nativeStore(emulator, 'rec'));
