// Fan-out and fan-in on the in-memory store (the many-children case is fanout-big.*.test.ts).
import { fanOutSuite } from './fanout-suite';
import { MemoryStore } from '../../src/store/memory/store';

fanOutSuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }));
