/**
 * The store a chaos process opens, by emulator: the orchestrator (kickoffs, the final reads) and
 * every worker open theirs here, so each run's processes share one kind of store.
 *
 * - `datastore` (the legacy emulator) and `firestore` (the Firestore emulator in Datastore mode):
 *   `DatastoreStore` over a `Datastore` client, its store options left at their defaults.
 * - `firestoreNative` (the Firestore emulator in Native mode): `FirestoreKeyStore` (the `FirestoreStore` of Datastore `Key`s the chaos run shares with the other stores) over a `Firestore`
 *   client, with a call deadline of 30 s instead of 5 s, as the tests give it on this emulator
 *   (`NATIVE_EMULATOR_OPTIONS` of test/support/firestore-native.ts): the emulator holds a
 *   transaction's read locks until its lock timeout ends a deadlock, about 5 s, so with 5 s the
 *   contention of the duplicates would end as `StoreUnavailableError` rather than as contention.
 *
 * The chains' keys are `Key`s of the kind `CHAIN_KIND` in the default namespace, on every store
 * (on Native mode, the documents `ChaosChain/<name>`). `readChains` reads the stored chains with
 * the client, not through the library, for the oracle's judgement.
 */
import { Datastore, Key } from '@google-cloud/datastore';
import { Firestore, type DocumentData } from '@google-cloud/firestore';
import { DatastoreStore, type Properties, type Store } from '../src/index';
import { FirestoreKeyStore } from '../src/store/firestore/store';
import type { EmulatorName } from './options';
import { CHAIN_KIND } from './protocol';

/** The Native-mode store's call deadline on the emulator (see the file's comment). */
export const NATIVE_CALL_TIMEOUT_MS = 30_000;

/** Lookups per batch of `readLocks`. */
const READ_BATCH = 500;

/** A store of one emulator, and what the chaos run needs around it. */
export interface ChainStore {
  readonly store: Store;
  /** The key of the chain (or child chain) `name`. */
  key(name: string): Key;
  /** The stored chains among `names`, by name, read with the client (absent ones are left out). */
  readChains(names: readonly string[]): Promise<Map<string, Properties>>;
  /** Closes the client. */
  close(): Promise<void>;
}

/** Opens the store of `emulator` at `host` (`host:port`: the emulator, or the fault proxy in front of it). */
export function openChainStore(emulator: EmulatorName, host: string, projectId: string): ChainStore {
  return emulator === 'firestoreNative' ? nativeChainStore(host, projectId) : datastoreChainStore(host, projectId);
}

function datastoreChainStore(host: string, projectId: string): ChainStore {
  const datastore = new Datastore({ projectId, apiEndpoint: host });
  const key = (name: string): Key => datastore.key([CHAIN_KIND, name]);
  return {
    store: new DatastoreStore(datastore),
    key,
    async readChains(names) {
      const out = new Map<string, Properties>();
      for (let i = 0; i < names.length; i += READ_BATCH) {
        const [entities] = (await datastore.get(names.slice(i, i + READ_BATCH).map(key))) as [(Properties & { [k: symbol]: Key })[]];
        for (const entity of entities) out.set(String(entity[datastore.KEY].name), entity);
      }
      return out;
    },
    close: async () => undefined, // the Datastore client holds nothing that keeps the process up
  };
}

/**
 * The Firestore client reaches an emulator through `FIRESTORE_EMULATOR_HOST` (which it prefers to
 * its `host` setting: no TLS, the emulator's credentials), read when the client is made: set to
 * `host` while it is made, then put back.
 */
function nativeChainStore(host: string, projectId: string): ChainStore {
  const before = process.env.FIRESTORE_EMULATOR_HOST;
  process.env.FIRESTORE_EMULATOR_HOST = host;
  let firestore: Firestore;
  try {
    firestore = new Firestore({ projectId });
  } finally {
    if (before === undefined) delete process.env.FIRESTORE_EMULATOR_HOST;
    else process.env.FIRESTORE_EMULATOR_HOST = before;
  }
  return {
    store: new FirestoreKeyStore(firestore, { projectId, callTimeoutMs: NATIVE_CALL_TIMEOUT_MS }),
    key: (name) => new Key({ path: [CHAIN_KIND, name] }),
    async readChains(names) {
      const out = new Map<string, Properties>();
      for (let i = 0; i < names.length; i += READ_BATCH) {
        // A chain's name (`c00042`, `c00042-k1`) is its document id as src/store/firestore/paths.ts maps it.
        const docs = await firestore.getAll(...names.slice(i, i + READ_BATCH).map((name) => firestore.collection(CHAIN_KIND).doc(name)));
        for (const doc of docs) {
          const data: DocumentData | undefined = doc.data();
          if (data) out.set(doc.id, data);
        }
      }
      return out;
    },
    close: () => firestore.terminate(),
  };
}
