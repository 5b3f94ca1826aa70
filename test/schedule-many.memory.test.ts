// locker.scheduleMany() on the in-memory store.
import { scheduleManySuite } from './schedule-many-suite';
import { MemoryStore } from '../src/store/memory';

scheduleManySuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }));
