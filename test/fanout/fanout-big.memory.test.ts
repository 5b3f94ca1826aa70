// One fan-out of many children on the in-memory store: 2,000 in `npm test`, 10,000 in `npm run
// test:long` (CI runs it). The emulators' runs of the same case are fanout-big.legacy.long.test.ts and
// fanout-big.firestore.long.test.ts, which only `npm run test:long` runs.
import { manyChildren, manyChildrenCase } from './fanout-suite';
import { MemoryStore } from '../../src/store/memory/store';
import { scaled } from '../support/test-scale';

manyChildrenCase('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }), manyChildren(scaled(2_000, 10_000)));
