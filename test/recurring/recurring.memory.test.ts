// Recurring work on the in-memory store (the suite runs on both emulators too).
import { recurringSuite } from './recurring-suite';
import { MemoryStore } from '../../src/store/memory/store';

recurringSuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }));
