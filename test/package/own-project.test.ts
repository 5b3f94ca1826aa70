/**
 * Test files run one after another on the same two emulators (a lane of scripts/test-lanes.mjs),
 * and side by side on the emulators a test command shares, each in a Datastore project of its own (test/support/own-project.mjs): what one file writes, another
 * file's reads, queries and sweeps (which look in every namespace of their project) cannot see.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Datastore } from '@google-cloud/datastore';
import { firestoreDatastore, legacyDatastore, uniqueNamespace } from '../support/emulator';

const emulated = process.env.DATASTORE_EMULATOR_HOST !== undefined && process.env.LOCKER_FIRESTORE_EMULATOR_HOST !== undefined;

describe('each test file in a project of its own', { skip: emulated ? false : 'the emulators are not running (npm test starts them)' }, () => {
  it('names this file\'s project after its process', () => {
    assert.match(process.env.DATASTORE_PROJECT_ID ?? '', new RegExp(`-${process.pid}$`));
  });

  for (const [name, client, variable] of [
    ['the legacy Datastore emulator', legacyDatastore, 'DATASTORE_EMULATOR_HOST'],
    ['the Firestore emulator', firestoreDatastore, 'LOCKER_FIRESTORE_EMULATOR_HOST'],
  ] as const) {
    it(`keeps what this file writes out of another project on ${name}`, async () => {
      const mine = client();
      const namespace = uniqueNamespace('own-project');
      const key = mine.key({ namespace, path: ['OwnProject', 'probe'] });
      await mine.save({ key, data: { pid: process.pid } });
      assert.deepEqual((await mine.get(key))[0]?.pid, process.pid, 'this file reads its own write');
      const other = new Datastore({ projectId: `${process.env.DATASTORE_PROJECT_ID}-other`, apiEndpoint: process.env[variable] });
      const [seen] = await other.get(other.key({ namespace, path: ['OwnProject', 'probe'] }));
      assert.equal(seen, undefined, 'another project does not see it');
      const [kinds] = await other.runQuery(other.createQuery(namespace, 'OwnProject'));
      assert.deepEqual(kinds, [], 'nor finds it with a query');
    });
  }
});
