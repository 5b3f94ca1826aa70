// Bulk operations on the in-memory store.
import { bulkSuite } from './bulk-suite';
import { MemoryStore } from '../../src/store/memory/store';

bulkSuite('the in-memory store', async () => ({ store: new MemoryStore({ projectId: 'locker-test' }), namespace: undefined }));
