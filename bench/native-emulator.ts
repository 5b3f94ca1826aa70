/**
 * The Firestore emulator in Native mode, for the part of the benchmark that measures
 * `FirestoreStore`: `scripts/with-emulators.mjs` starts only the two Datastore-mode emulators, so
 * this part starts its own (`scripts/emulators.mjs`, `firestoreNative`) and stops it when done.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Firestore } from '@google-cloud/firestore';

interface Emulators {
  firestoreNative?: { host: string; pid: number };
  stop(): Promise<void>;
}

/** A started emulator: a client of it, and a stop that ends the client and the JVM. */
export interface NativeEmulator {
  host: string;
  client: Firestore;
  stop(): Promise<void>;
}

/** Starts the emulator (a JVM: seconds) and opens a client of it in project `projectId`. */
export async function startNativeEmulator(projectId: string): Promise<NativeEmulator> {
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
    host,
    client,
    async stop() {
      await client.terminate().catch(() => undefined);
      await emulators.stop();
    },
  };
}
