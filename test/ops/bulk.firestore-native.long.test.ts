// Bulk operations on FirestoreStore against the Firestore emulator in Native mode, in a namespace of its own;
// the file starts the emulator itself (test/support/firestore-native.ts).
import { bulkSuite } from './bulk-suite';
import { useFirestoreNative } from '../support/firestore-native';
import { nativeStore } from '../support/native-store';

const emulator = useFirestoreNative();

bulkSuite('the Firestore emulator in Native mode', nativeStore(emulator, 'bulkop'));
