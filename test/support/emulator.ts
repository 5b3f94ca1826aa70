/**
 * Clients for the Datastore emulators that `scripts/test.mjs` starts, and helpers to keep suites
 * apart and to look at what was really stored.
 */
import { createServer } from 'node:net';
import { Datastore, DatastoreClient, type Key } from '@google-cloud/datastore';

const PROJECT_ID = process.env.DATASTORE_PROJECT_ID ?? 'locker-test';

/** A client of the legacy Cloud Datastore emulator (optimistic transactions). */
export function legacyDatastore(): Datastore {
  return clientFor('DATASTORE_EMULATOR_HOST', 'the Datastore emulator');
}

/** A client of the Firestore emulator in Datastore mode (locking reads, like production). */
export function firestoreDatastore(): Datastore {
  return clientFor('LOCKER_FIRESTORE_EMULATOR_HOST', 'the Firestore emulator in Datastore mode');
}

let namespaces = 0;

/** A namespace no other suite or test uses, so none sees another's data. */
export function uniqueNamespace(prefix = 'test'): string {
  namespaces += 1;
  return `${prefix}-${process.pid}-${namespaces}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A loopback port nothing listens on (it was free a moment ago and is closed again). */
export function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** A client pointed at a closed loopback port: every call fails to connect. */
export function unreachableDatastore(port: number): Datastore {
  return new Datastore({ projectId: PROJECT_ID, apiEndpoint: `127.0.0.1:${port}` });
}

/** A stored value as the Datastore API returns it, before the client decodes it. */
export interface RawValue {
  valueType?: string;
  excludeFromIndexes?: boolean;
  integerValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values: RawValue[] };
  entityValue?: { properties: Record<string, RawValue> };
}

/**
 * The properties of an entity exactly as stored (value types and index exclusions), read with a
 * plain lookup on the generated client; undefined when the entity does not exist.
 */
export async function rawProperties(datastore: Datastore, key: Key): Promise<Record<string, RawValue> | undefined> {
  const keyProto = {
    partitionId: { namespaceId: key.namespace ?? '' },
    path: ancestry(key).map((k) =>
      k.name !== undefined ? { kind: k.kind, name: k.name } : { kind: k.kind, id: String(k.id) },
    ),
  };
  const client = new DatastoreClient({ ...datastore.options });
  try {
    const projectId = datastore.options.projectId ?? (await datastore.getProjectId());
    const [response] = await client.lookup({ projectId, databaseId: datastore.options.databaseId ?? '', keys: [keyProto] });
    return response.found?.[0]?.entity?.properties as Record<string, RawValue> | undefined;
  } finally {
    await client.close();
  }
}

/**
 * The store contract's look behind a Datastore store (`RawEntities`, test/store/store-contract.ts):
 * what is stored, read with {@link rawProperties}, and entities saved with the client itself.
 */
export function datastoreRaw(datastore: Datastore): {
  properties(key: Key): Promise<Record<string, RawValue> | undefined>;
  save(key: Key, data: Record<string, unknown>, excludeFromIndexes: string[]): Promise<void>;
} {
  return {
    properties: (key) => rawProperties(datastore, key),
    save: async (key, data, excludeFromIndexes) => {
      await datastore.save({ key, data, excludeFromIndexes });
    },
  };
}

function ancestry(key: Key): Key[] {
  const keys: Key[] = [];
  for (let k: Key | undefined = key; k; k = k.parent) keys.unshift(k);
  return keys;
}

function clientFor(variable: string, what: string): Datastore {
  const host = process.env[variable];
  if (!host) {
    throw new Error(
      `${variable} is not set: run the tests with \`npm test\` or \`node scripts/test.mjs\`, which start ${what}`,
    );
  }
  return new Datastore({ projectId: PROJECT_ID, apiEndpoint: host });
}
