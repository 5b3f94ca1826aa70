// One fan-out of many children: `npm test` runs 2,000 on the in-memory store; `npm run test:long`
// (CI runs it) runs 10,000 on the in-memory store, then on each emulator, one store at a time (the
// emulators' runs are bound by the machine's two cores). FANOUT_BIG sets the number on every store.
import { manyChildrenCase } from './fanout-suite';
import { MemoryStore } from '../../src/store/memory/store';
import { firestoreDatastore, legacyDatastore } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';
import { LONG, scaled } from '../support/test-scale';

const n = Number(process.env.FANOUT_BIG ?? scaled(2_000, 10_000));
if (!Number.isInteger(n) || n < 1) throw new RangeError(`FANOUT_BIG must be a whole number of children; got ${JSON.stringify(process.env.FANOUT_BIG)}`);
// Long enough for the queue to dispatch every child on a loaded machine (about 30 children a
// second on an emulator alone, a third of that beside other runs): the join's wait and `stallAfter`.
const limitMs = Math.max(120_000, n * 120);

manyChildrenCase('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }), n, limitMs);
if (LONG) {
  manyChildrenCase('the Datastore emulator', namespacedStore(legacyDatastore, 'fanbig'), n, limitMs);
  manyChildrenCase('the Firestore emulator in Datastore mode', namespacedStore(firestoreDatastore, 'fanbig'), n, limitMs);
}
