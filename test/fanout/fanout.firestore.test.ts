// Fan-out and fan-in on the Firestore emulator in Datastore mode, with a store that sweeps only its
// own namespace (the legacy emulator's run is `fanout.datastore.test.ts`).
import { fanOutSuite } from './fanout-suite';
import { firestoreDatastore } from '../support/emulator';
import { bigOnEmulator, openDatastoreStore } from './fanout-emulator';

fanOutSuite('the Firestore emulator in Datastore mode', openDatastoreStore(firestoreDatastore), bigOnEmulator());
