#!/usr/bin/env node
/**
 * `npx datastore-locker-indexes Order Invoice > index.yaml`: prints the `index.yaml` entries
 * `locker.inspect()` and the status router need for the kinds named.
 * `npx datastore-locker-indexes --firestore Order Invoice > firestore.indexes.json`: prints the
 * `firestore.indexes.json` document `FirestoreStore` (Native mode) needs instead, without loading
 * `@google-cloud/firestore`. Exit code 2 and a usage on stderr when no kind, or a bad one, is given.
 */
import { firestoreIndexes } from '../store/firestore/indexes';
import { indexYaml } from '../store/index-yaml';

const USAGE = [
  'usage: datastore-locker-indexes KIND [KIND ...] > index.yaml',
  '       datastore-locker-indexes --firestore KIND [KIND ...] > firestore.indexes.json',
].join('\n');

const args = process.argv.slice(2);
const firestore = args.includes('--firestore');
const kinds = args.filter((arg) => arg !== '--firestore');
try {
  process.stdout.write(firestore ? `${JSON.stringify(firestoreIndexes(kinds), null, 2)}\n` : indexYaml(kinds));
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${USAGE}\n`);
  process.exitCode = 2;
}
