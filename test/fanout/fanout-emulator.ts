// What the fan-out suite's two emulator files share: a store on one emulator that sweeps only a
// namespace of its own, and the size of the big case (`FANOUT_BIG_EMULATOR`, run by
// `npm run test:fanout-big`; the suite's own default otherwise).
import { DatastoreStore } from '../../src/store/datastore/store';
import { uniqueNamespace, type legacyDatastore } from '../support/emulator';

/** Opens a store on the emulator `datastore` gives, sweeping a new namespace of its own. */
export const openDatastoreStore = (datastore: () => ReturnType<typeof legacyDatastore>) => async () => {
  const namespace = uniqueNamespace('fan');
  const store = new DatastoreStore(datastore(), { namespaces: [namespace] });
  return { store, namespace, close: () => store.shutdown() };
};

/** The big case's size on an emulator, when `FANOUT_BIG_EMULATOR` sets one. */
export function bigOnEmulator(): { big?: number } {
  const big = Number(process.env.FANOUT_BIG_EMULATOR ?? 0);
  return big > 0 ? { big } : {};
}
