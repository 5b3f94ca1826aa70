// The promises between features on FirestoreStore against the Firestore emulator in Native mode,
// which refuses a document over 1 MiB as production does; the file starts the emulator itself.
import { promisesSuite } from './promises-suite';
import { useFirestoreNative } from '../support/firestore-native';
import { nativeStore } from '../support/native-store';

const emulator = useFirestoreNative();

promisesSuite('the Firestore emulator in Native mode', nativeStore(emulator, 'promises'), { oversized: true });
