/**
 * The Native-mode store under measurement, as it ships: the package's `datastore-locker/firestore`
 * entry `dist/firestore.js` (built by `npm run bench`), typed by its sources, loaded only by the
 * part that measures it, so that no other part loads `@google-cloud/firestore`. See `library.ts`
 * for why the build and not the sources.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type * as FirestoreEntry from '../src/firestore';

const ENTRY = join(__dirname, '..', 'dist', 'firestore.js');

/** The `FirestoreStore` class of the built entry. */
export function builtFirestoreStore(): typeof FirestoreEntry.FirestoreStore {
  if (!existsSync(ENTRY)) throw new Error(`${ENTRY} is missing: run \`npm run build\` first (\`npm run bench\` does)`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require(ENTRY) as typeof FirestoreEntry).FirestoreStore;
}
