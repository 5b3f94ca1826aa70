// Fan-out's ends and edges (issue 37: defects 3, 4, 8 and the suspected cases) on the in-memory store.
import { fanOutEndsSuite } from './fanout-ends-suite';
import { MemoryStore } from '../../src/store/memory/store';

fanOutEndsSuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }));
