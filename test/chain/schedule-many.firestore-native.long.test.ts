// locker.scheduleMany() on FirestoreStore against the Firestore emulator in Native mode (each
// entity's conditional write, its ledger record and its marker in one atomic batch of its own),
// with a store that sweeps only its own namespace; the file starts the emulator itself.
import { scheduleManySuite } from './schedule-many-suite';
import { useFirestoreNative } from '../support/firestore-native';
import { nativeStore } from '../support/native-store';
import { scaled } from '../support/test-scale';

const emulator = useFirestoreNative();

scheduleManySuite('the Firestore emulator in Native mode', nativeStore(emulator, 'bulk'), { chains: scaled(300, 1_000) });
