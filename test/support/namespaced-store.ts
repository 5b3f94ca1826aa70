/**
 * What the store suites run on an emulator: a `DatastoreStore` built with no option but the one
 * namespace it sweeps, fresh for each suite, so no suite sees another's records.
 */
import type { Datastore } from '@google-cloud/datastore';
import { DatastoreStore, type DatastoreStoreOptions } from '../../src/store/datastore/store';
import type { StoreUnderTest } from '../step/handle-suite';
import { uniqueNamespace } from './emulator';

/**
 * Opens a store on `datastore()` in a namespace of its own named after `prefix`, with `options`
 * beside it; `close` shuts it down.
 */
export function namespacedStore(datastore: () => Datastore, prefix: string, options: Omit<DatastoreStoreOptions, 'namespaces'> = {}): () => Promise<StoreUnderTest> {
  return async () => {
    const namespace = uniqueNamespace(prefix);
    const store = new DatastoreStore(datastore(), { ...options, namespaces: [namespace] });
    return { store, namespace, close: () => store.shutdown() };
  };
}
