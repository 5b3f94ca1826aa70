// Store.queryLocks on every store: memory, the legacy Datastore emulator, the Firestore emulator in Datastore mode.
import { DatastoreStore } from '../../src/store/datastore/store';
import { MemoryStore } from '../../src/store/memory/store';
import { storeQueryContract } from './store-query-contract';
import { firestoreDatastore, legacyDatastore } from '../support/emulator';

storeQueryContract('MemoryStore', () => new MemoryStore());
storeQueryContract('DatastoreStore on the Datastore emulator', () => new DatastoreStore(legacyDatastore()));
const firestore = firestoreDatastore();
storeQueryContract('DatastoreStore on the Firestore emulator', () => new DatastoreStore(firestore, { beginWithFirstRead: false, conditionalWrites: false }));
