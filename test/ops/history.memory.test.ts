import { historySuite } from './history-suite';
import { MemoryStore } from '../../src/store/memory/store';

historySuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }));
