// firestoreIndexes() and `datastore-locker-indexes --firestore`: the firestore.indexes.json document
// FirestoreStore's queries (src/store/firestore/queries.ts) need in Native mode, for the kinds a
// user names. The expected indexes are written out here as read from the query code: queryLocks
// and countLocks filter `lock_state ==`, then `lock_run ==` for a run, then range and order on
// `lock_ts` (ascending or descending), on a kind at every depth (collection-group scope); the
// search finds a chain by `lock_chain` at every depth; listDue and fan-out's findKeys without a
// namespace are collection-group queries on `due`. No emulator: the command runs from source through tsx.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { firestoreIndexes, type FirestoreIndexes } from '../../src/firestore';

const root = join(__dirname, '..', '..');
const bin = join(root, 'src', 'bin', 'indexes.ts');

const locks = (kind: string): FirestoreIndexes['indexes'] => [
  { collectionGroup: kind, queryScope: 'COLLECTION_GROUP', fields: [{ fieldPath: 'lock_state', order: 'ASCENDING' }, { fieldPath: 'lock_ts', order: 'ASCENDING' }] },
  { collectionGroup: kind, queryScope: 'COLLECTION_GROUP', fields: [{ fieldPath: 'lock_state', order: 'ASCENDING' }, { fieldPath: 'lock_ts', order: 'DESCENDING' }] },
  {
    collectionGroup: kind, queryScope: 'COLLECTION_GROUP',
    fields: [{ fieldPath: 'lock_state', order: 'ASCENDING' }, { fieldPath: 'lock_run', order: 'ASCENDING' }, { fieldPath: 'lock_ts', order: 'ASCENDING' }],
  },
  {
    collectionGroup: kind, queryScope: 'COLLECTION_GROUP',
    fields: [{ fieldPath: 'lock_state', order: 'ASCENDING' }, { fieldPath: 'lock_run', order: 'ASCENDING' }, { fieldPath: 'lock_ts', order: 'DESCENDING' }],
  },
];

const groupToo = (collectionGroup: string, fieldPath: string): FirestoreIndexes['fieldOverrides'][number] => ({
  collectionGroup,
  fieldPath,
  indexes: [{ order: 'ASCENDING', queryScope: 'COLLECTION' }, { order: 'ASCENDING', queryScope: 'COLLECTION_GROUP' }],
});

describe('firestoreIndexes()', () => {
  it('lists the composite indexes queryLocks and countLocks need for each kind named, once each', () => {
    assert.deepEqual(firestoreIndexes(['Order', 'Invoice', 'Order']).indexes, [...locks('Order'), ...locks('Invoice')]);
  });
  it('enables `lock_chain` of each kind named, and `due` on the ledger and the fan-out header, for collection-group queries, keeping their collection-scope indexes', () => {
    assert.deepEqual(firestoreIndexes(['Order', 'Line', 'Order']).fieldOverrides,
      [groupToo('Order', 'lock_chain'), groupToo('Line', 'lock_chain'), groupToo('LockerOutbox', 'due'), groupToo('LockerFanOut', 'due')]);
  });
  it('is the whole document: the two lists and nothing else', () => {
    assert.deepEqual(firestoreIndexes(['Order']), { indexes: locks('Order'), fieldOverrides: [groupToo('Order', 'lock_chain'), groupToo('LockerOutbox', 'due'), groupToo('LockerFanOut', 'due')] });
  });
  it('refuses no kind with a TypeError', () => {
    assert.throws(() => firestoreIndexes([]), { name: 'TypeError', message: /at least one kind/ });
  });
  it('refuses a kind that cannot be a collection id with a TypeError naming it', () => {
    for (const kind of ['', '__kind__', 'a/b', 'x'.repeat(1_501)]) {
      assert.throws(() => firestoreIndexes(['Order', kind]), (error: unknown) =>
        error instanceof TypeError && error.message.includes(JSON.stringify(kind)), JSON.stringify(kind).slice(0, 20));
    }
  });
});

describe('datastore-locker-indexes --firestore', () => {
  /** Runs node with tsx on `args`. */
  const node = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', ...args], { cwd: root }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr }));
  });
  const run = (args: string[]): ReturnType<typeof node> => node([bin, ...args]);

  it('prints the document for the kinds named as JSON, 2-space indented, with a trailing newline', async () => {
    const { code, stdout, stderr } = await run(['--firestore', 'Order', 'Invoice']);
    assert.equal(code, 0, stderr);
    assert.deepEqual(JSON.parse(stdout), firestoreIndexes(['Order', 'Invoice']));
    assert.equal(stdout, `${JSON.stringify(firestoreIndexes(['Order', 'Invoice']), null, 2)}\n`);
  });
  it('exits 2 with the usage of both forms when no kind is named', async () => {
    const { code, stdout, stderr } = await run(['--firestore']);
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.match(stderr, /usage: datastore-locker-indexes KIND/);
    assert.match(stderr, /datastore-locker-indexes --firestore KIND/);
  });
  it('exits 2 naming a bad kind', async () => {
    const { code, stdout, stderr } = await run(['--firestore', 'Order', 'a/b']);
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.match(stderr, /"a\/b"/);
  });
  it('never loads @google-cloud/firestore (an optional peer)', async () => {
    // The command runs in a process that lists, on its way out, every module it required.
    const { code, stdout, stderr } = await node(['-e', `
      process.argv = [process.execPath, ${JSON.stringify(bin)}, '--firestore', 'Order'];
      const write = process.stdout.write.bind(process.stdout);
      let printed = '';
      process.stdout.write = (text) => { printed += text; return true; };
      require(${JSON.stringify(bin)});
      const files = Object.keys(require.cache);
      write(JSON.stringify({ firestore: files.filter((f) => f.includes('@google-cloud/firestore')), printed: JSON.parse(printed) }));
    `]);
    assert.equal(code, 0, stderr);
    assert.deepEqual(JSON.parse(stdout), { firestore: [], printed: firestoreIndexes(['Order']) });
  });
});
