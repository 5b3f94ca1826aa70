/**
 * The Firestore emulator in Native mode the model runs on (`--store firestoreNative`): the one
 * `FIRESTORE_EMULATOR_HOST` names (the test files start one, test/support/firestore-native.ts),
 * else one started for the run (`scripts/emulators.mjs`, `firestoreNative`: a JVM, seconds) and
 * stopped with it. `scripts/with-emulators.mjs` starts only the two Datastore-mode emulators.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Firestore } from '@google-cloud/firestore';

interface Emulators {
  firestoreNative?: { host: string; pid: number };
  stop(): Promise<void>;
}

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
  const module = (await import(pathToFileURL(join(__dirname, '..', 'scripts', 'emulators.mjs')).href)) as {
    startEmulators(names: string[]): Promise<Emulators>;
  };
  const emulators = await module.startEmulators(['firestoreNative']);
  const host = emulators.firestoreNative?.host;
  if (!host) {
    await emulators.stop();
    throw new Error('the Firestore emulator in Native mode started without a host');
  }
  // ssl: false is the client's sign of an emulator (it sends the emulator's owner credentials).
  const client = new Firestore({ projectId, host, ssl: false, useBigInt: true });
  return {
    client,
    async stop() {
      await client.terminate().catch(() => undefined);
      await emulators.stop();
    },
  };
}
