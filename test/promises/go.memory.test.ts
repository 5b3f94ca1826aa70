import { goSuite } from './go-suite';
import { MemoryStore } from '../../src/store/memory/store';

goSuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }));
