/**
 * The Firestore emulator in Native mode the model runs on (`--store firestoreNative`): the one
 * `FIRESTORE_EMULATOR_HOST` names (the test files start one, test/support/firestore-native.ts),
 * else one started for the run (`startNativeEmulator`, shared with the bench: a JVM, seconds) and
 * stopped with it. `scripts/with-emulators.mjs` starts only the two Datastore-mode emulators.
 */
import { Firestore } from '@google-cloud/firestore';
import { startNativeEmulator } from '../bench/native-emulator';

/** A client of the emulator, and a stop that ends the client (and the JVM, when it was started here). */
export interface NativeEmulator {
  client: Firestore;
  stop(): Promise<void>;
}

/** Opens a client of the emulator `FIRESTORE_EMULATOR_HOST` names, or of one started now, in project `projectId`. */
export async function openNativeEmulator(projectId: string): Promise<NativeEmulator> {
  process.env.METADATA_SERVER_DETECTION ??= 'none';
  const named = process.env.FIRESTORE_EMULATOR_HOST;
  if (named) {
    // The client reads FIRESTORE_EMULATOR_HOST itself (no TLS, the emulator's credentials).
    const client = new Firestore({ projectId, useBigInt: true });
    return { client, stop: () => client.terminate().catch(() => undefined) };
  }
  return startNativeEmulator(projectId);
}
