/**
 * `BENCH_ONLY=native` (`npm run bench:native`), and the last part of a full run: a step against
 * its physical limit on the legacy Datastore emulator, the Firestore emulator in Datastore mode
 * (both started by `scripts/with-emulators.mjs`, through `DatastoreStore`) and the Firestore
 * emulator in Native mode (started here, through `FirestoreStore`), one after the other, with the
 * same code (`against-limit.ts`). The Native-mode emulator is started before anything is measured,
 * so its JVM's start-up falls on no measurement, and stopped at the end.
 */
import type { Store } from '../src/types';
import { firestoreDatastore, legacyDatastore } from '../test/support/emulator';
import { measureAgainstLimit, type AgainstLimitSamples } from './against-limit';
import { NATIVE_BACKEND } from './against-limit-report';
import { KeySource } from './entities';
import { builtFirestoreStore } from './firestore-library';
import { DatastoreStore } from './library';
import { startNativeEmulator } from './native-emulator';
import type { Settings } from './settings';

/** Measures the three backends in turn; `namespace` prefixes the namespaces of their keys. */
export async function measureBackends(namespace: string, s: Settings, progress: (text: string) => void): Promise<AgainstLimitSamples[]> {
  const legacy = legacyDatastore();
  const projectId = String(legacy.options.projectId);
  progress('starting the Firestore emulator in Native mode');
  const native = await startNativeEmulator(projectId);
  try {
    const FirestoreStore = builtFirestoreStore();
    const nativeNamespace = `${namespace}-native`;
    const firestore = firestoreDatastore();
    const backends: Array<{ name: string; store: Store; keys: KeySource }> = [
      { name: 'legacy Datastore emulator', store: new DatastoreStore(legacy), keys: new KeySource(legacy, `${namespace}-legacy`) },
      { name: 'Firestore emulator (Datastore mode)', store: new DatastoreStore(firestore), keys: new KeySource(firestore, `${namespace}-firestore`) },
      // Keys are Datastore keys at the store's port: the legacy client only builds them here.
      // A 30 s call deadline, as the tests' stores on this emulator have: its transactions wait up to
      // about 5 s for locks, and the untimed seeding's 16 transactions at once overran 5 s on a busy
      // machine (2026-11-29). A deadline changes no figure unless a call outlives it.
      { name: NATIVE_BACKEND, store: new FirestoreStore(native.client, { projectId, namespaces: [nativeNamespace], callTimeoutMs: 30_000 }), keys: new KeySource(legacy, nativeNamespace) },
    ];
    const out: AgainstLimitSamples[] = [];
    for (const b of backends) out.push(await measureAgainstLimit(b.name, b.store, b.keys, s, progress));
    return out;
  } finally {
    await native.stop();
  }
}
