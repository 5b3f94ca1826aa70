import { faultSuite } from './fault-suite';
import { MemoryStore } from '../../src/store/memory/store';

faultSuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }));
