// Fan-out and fan-in on the in-memory store. `npm test` runs the many-children case at 2,000;
// `npm run test:fanout-big` runs it at 10,000 here and on both emulators (FANOUT_BIG sets the size).
import { fanOutSuite } from './fanout-suite';
import { MemoryStore } from '../../src/store/memory/store';

fanOutSuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }), { big: Number(process.env.FANOUT_BIG ?? 2_000) });
