/**
 * The store options each emulator needs. DESIGN section 12 says none should be needed (the store
 * probes the backend itself); until that lands on main, the Firestore emulator needs what the
 * README says: no begin-with-first-read and no conditional writes. This is the one place to empty.
 */
import type { DatastoreStoreOptions } from '../src/index';
import type { EmulatorName } from './options';

export function storeOptionsFor(emulator: EmulatorName): DatastoreStoreOptions {
  return emulator === 'firestore' ? { beginWithFirstRead: false, conditionalWrites: false } : {};
}
