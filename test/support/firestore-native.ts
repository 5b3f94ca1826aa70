/**
 * The Firestore emulator in Native mode, for the test files that need it: `useFirestoreNative()`
 * starts one (scripts/emulators.mjs, `firestoreNative`) before the file's first test and stops it
 * after its last, and hands out clients of it. `npm test`'s lanes do not start this emulator (each
 * lane would pay a JVM for a few files): each file that uses it starts its own.
 */
import { after, before } from 'node:test';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Firestore } from '@google-cloud/firestore';

interface Emulators {
  firestoreNative?: { host: string; pid: number };
  stop(): Promise<void>;
}

/** What a file that uses the emulator gets. */
export interface FirestoreNative {
  /** A client of the emulator (a new one each call: `useBigInt`, so integers beyond 2^53 read back whole); valid once the file's tests run. */
  client(): Firestore;
  /** The emulator's `host:port`; valid once the file's tests run. */
  host(): string;
}

/** Starts the emulator before the file's tests and stops it after them (call once, at the file's top level). */
export function useFirestoreNative(): FirestoreNative {
  let emulators: Emulators | undefined;
  const clients: Firestore[] = [];
  before(async () => {
    process.env.METADATA_SERVER_DETECTION = 'none';
    const module = (await import(pathToFileURL(join(__dirname, '..', '..', 'scripts', 'emulators.mjs')).href)) as {
      startEmulators(names: string[]): Promise<Emulators>;
    };
    emulators = await module.startEmulators(['firestoreNative']);
    process.env.FIRESTORE_EMULATOR_HOST = emulators.firestoreNative!.host;
  }, { timeout: 90_000 });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.terminate()));
    await emulators?.stop();
  });
  const host = (): string => {
    const started = emulators?.firestoreNative?.host;
    if (!started) throw new Error('the Firestore emulator in Native mode is not started: call useFirestoreNative() at the top of the test file');
    return started;
  };
  return {
    host,
    client: () => {
      host();
      const projectId = `locker-native-${process.pid}`;
      const client = new Firestore({ projectId, useBigInt: true });
      clients.push(client);
      return client;
    },
  };
}
