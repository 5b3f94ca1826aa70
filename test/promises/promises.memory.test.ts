import { promisesSuite } from './promises-suite';
import { MemoryStore } from '../../src/store/memory/store';

promisesSuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }));
