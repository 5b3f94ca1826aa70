import { handleSuite } from './handle-suite';
import { chainSuite } from '../chain/chain-suite';
import { MemoryStore } from '../../src/store/memory/store';

handleSuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }));
chainSuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }));
