// Fan-out and fan-in on the legacy Datastore emulator, with a store that sweeps only its own
// namespace. The Firestore emulator's run is `fanout.firestore.test.ts`: one file per emulator, so
// that `npm test` runs the two side by side.
import { fanOutSuite } from './fanout-suite';
import { legacyDatastore } from '../support/emulator';
import { bigOnEmulator, openDatastoreStore } from './fanout-emulator';

fanOutSuite('the Datastore emulator', openDatastoreStore(legacyDatastore), bigOnEmulator());
