// locker.scheduleMany() on the Firestore emulator in Datastore mode (which ignores baseVersion:
// batches in transactions), with a store built with no option but the namespace it sweeps. The
// legacy emulator's run, and what a call sends on each, are in schedule-many.datastore.test.ts.
import { scheduleManySuite } from './schedule-many-suite';
import { firestoreDatastore } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';
import { scaled } from '../support/test-scale';

scheduleManySuite('the Firestore emulator in Datastore mode', namespacedStore(firestoreDatastore, 'bulk'), { chains: scaled(300, 1_000) });
