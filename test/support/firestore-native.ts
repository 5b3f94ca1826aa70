/**
 * The Firestore emulator in Native mode, for the test files that need it: `useFirestoreNative()`
 * starts one (scripts/emulators.mjs, `firestoreNative`) before the file's first test and stops it
 * after its last, and hands out clients of it. `npm test`'s lanes do not start this emulator (each
 * lane would pay a JVM for a few files): each file that uses it starts its own. `clientOf(host)`
 * hands out a client of another address (a closed port, a proxy), set up as the emulator's are.
 */
import { after, before } from 'node:test';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Firestore } from '@google-cloud/firestore';

interface Emulators {
  firestoreNative?: { host: string; pid: number };
  stop(): Promise<void>;
}

/**
 * The options of a `FirestoreStore` on the emulator: a 30 s call deadline instead of 5 s, as the
 * other emulators' big cases have (`EMULATOR_OPTIONS` of test/fanout/fanout-suite.ts). The emulator
 * holds a transaction's read locks until its lock timeout ends a deadlock, about 5 s (the store
 * contract's lost-update and rollback cases measured 5.3 to 6.5 s, 2026-11-29), and its first
 * answers after it starts take seconds: with 5 s those calls end as `StoreUnavailableError`, not
 * as the contention the contract expects. The deadline's own tests give their stores 500 ms.
 */
export const NATIVE_EMULATOR_OPTIONS = Object.freeze({ callTimeoutMs: 30_000 });

/**
 * gRPC channel options of a client of another address: it tries to connect again within 250 ms
 * (not gRPC's backoff of up to 2 minutes), so the calls a test left pending there end soon once
 * the address answers again.
 */
const RECONNECT_SOON = { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 250 };

/** What a file that uses the emulator gets. */
export interface FirestoreNative {
  /** A client of the emulator (a new one each call: `useBigInt`, so integers beyond 2^53 read back whole); valid once the file's tests run. */
  client(): Firestore;
  /** The emulator's `host:port`; valid once the file's tests run. */
  host(): string;
  /**
   * A client like {@link client}'s, of `host` (`host:port`, no TLS, the emulator's credentials)
   * instead of the emulator: `FIRESTORE_EMULATOR_HOST`, which the client prefers to its `host`
   * setting, names `host` while it is made.
   */
  clientOf(host: string): Firestore;
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
  const make = (grpc: Record<string, number> = {}): Firestore => {
    const client = new Firestore({ projectId: `locker-native-${process.pid}`, useBigInt: true, ...grpc });
    clients.push(client);
    return client;
  };
  return {
    host,
    client: () => {
      host();
      return make();
    },
    clientOf: (other) => {
      const emulatorHost = host();
      process.env.FIRESTORE_EMULATOR_HOST = other;
      try {
        return make(RECONNECT_SOON);
      } finally {
        process.env.FIRESTORE_EMULATOR_HOST = emulatorHost;
      }
    },
  };
}
