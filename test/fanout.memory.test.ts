// Fan-out and fan-in on the in-memory store.
import { fanOutSuite } from './fanout-suite';
import { MemoryStore } from '../src/store/memory/store';

fanOutSuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }), { big: Number(process.env.FANOUT_BIG ?? 10_000) });
