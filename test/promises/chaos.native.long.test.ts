/**
 * `npm run chaos` in small on the Firestore emulator in Native mode (`--emulator firestoreNative`:
 * `FirestoreStore` on every worker, behind the fault proxy): test/promises/chaos-suite.ts, the same
 * seeded run and the same assertions as test/promises/chaos.test.ts on the legacy Datastore
 * emulator. In `npm run test:long` only: the run starts an emulator JVM of its own, and on the
 * Native-mode emulator, whose transactions wait on each other's locks (about 5 s), it takes longer.
 */
import { chaosSuite } from './chaos-suite';

chaosSuite({ emulator: 'firestoreNative', runTimeoutMs: 900_000 });
