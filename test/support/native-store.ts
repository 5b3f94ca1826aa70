/**
 * What the store suites run on the Firestore emulator in Native mode: a `FirestoreStore` that sweeps
 * only a namespace of its own, fresh for each suite, so no suite sees another's records.
 */
import { FirestoreKeyStore } from '../../src/store/firestore/store';
import type { StoreUnderTest } from '../step/handle-suite';
import { uniqueNamespace } from './emulator';
import { NATIVE_EMULATOR_OPTIONS, type FirestoreNative } from './firestore-native';

/** Opens a FirestoreStore on the emulator in a namespace of its own named after `prefix`. */
export function nativeStore(emulator: FirestoreNative, prefix: string): () => Promise<StoreUnderTest> {
  return async () => {
    const namespace = uniqueNamespace(prefix);
    return { store: new FirestoreKeyStore(emulator.client(), { ...NATIVE_EMULATOR_OPTIONS, namespaces: [namespace], projectId: 'locker-native' }), namespace };
  };
}
