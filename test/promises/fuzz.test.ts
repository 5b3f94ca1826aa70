/**
 * The fuzz (`npm run fuzz` sends 100,000 requests) in small: generated requests against handle()
 * on the legacy Datastore emulator, authentication on and off. None may get a 5xx other than the
 * documented 503 of a held step, crash the process, run the handler or write to the store; and
 * the crafted cases (signatures replayed on another route, body, step, chain or after expiry; tasks
 * whose route or body is not their step's; deep and oversized bodies; the status router's bulk
 * confirmations forged, with bad filters or replayed ids) get exactly their answer.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runFuzz } from '../../chaos/fuzz';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';

describe('fuzz of handle() (a small npm run fuzz)', () => {
  it('answers 3,000 generated requests without a 5xx beyond the documented 503, a crash, a handler run or a store write', { timeout: 240_000 }, async () => {
    const report = await runFuzz(legacyDatastore(), uniqueNamespace('fuzz'), 20261122, 3_000, 300, 16);
    assert.deepEqual(report.unexpected, [], 'no answer broke a rule');
    assert.equal(report.unanswered, 0);
    assert.equal(report.uncaughtErrors, 0);
    assert.equal(report.handlerRuns, 0, 'no generated request ran the handler');
    assert.equal(report.store.writes, 0, 'no generated request wrote to the store');
    assert.equal(report.withAuth + report.withoutAuth, 3_000);
    assert.ok(report.withAuth > 1_000 && report.withoutAuth > 1_000, 'both routes were fuzzed');
    for (const status of ['200', '400', '401', '405', '503']) assert.ok((report.statuses[status] ?? 0) > 0, `some requests were answered ${status}`);
    const crafted = Object.values(report.crafted).reduce((a, b) => a + b, 0);
    assert.ok(crafted > 150 && Object.keys(report.crafted).length === 25, `every crafted case was sent (replayed signatures, unbound routes and bodies, deep and large bodies; bulk confirmations forged, from another site, unauthenticated, with bad filters or ids, replaying an operation's id), each answered as it must be: ${JSON.stringify(report.crafted)}`);
    assert.ok(report.store.reads > 0, 'some requests reached the store (and only read it)');
    assert.ok(report.heapGrowthBytes < 16 * 1024 * 1024, `the heap stayed flat (grew ${report.heapGrowthBytes} bytes)`);
  });
});
