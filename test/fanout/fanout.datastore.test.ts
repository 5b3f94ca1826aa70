// Fan-out and fan-in on the legacy Datastore emulator and on the Firestore emulator in Datastore
// mode, each with a store that sweeps only its own namespace.
import { fanOutSuite } from './fanout-suite';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from '../support/emulator';

const open = (datastore: () => ReturnType<typeof legacyDatastore>) => async () => {
  const namespace = uniqueNamespace('fan');
  const store = new DatastoreStore(datastore(), { namespaces: [namespace] });
  return { store, namespace, close: () => store.shutdown() };
};

const big = Number(process.env.FANOUT_BIG_EMULATOR ?? 0);
fanOutSuite('the Datastore emulator', open(legacyDatastore), big > 0 ? { big } : {});
fanOutSuite('the Firestore emulator in Datastore mode', open(firestoreDatastore), big > 0 ? { big } : {});
