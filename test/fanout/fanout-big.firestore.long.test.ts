// One fan-out of 10,000 children on the Firestore emulator in Datastore mode, in `npm run
// test:long` only (a `.long.test.ts` file: scripts/test.mjs runs it with --long, never in `npm test`).
import { EMULATOR_OPTIONS, manyChildren, manyChildrenCase } from './fanout-suite';
import { firestoreDatastore } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';

manyChildrenCase('the Firestore emulator in Datastore mode', namespacedStore(firestoreDatastore, 'fanbig', EMULATOR_OPTIONS), manyChildren(10_000));
