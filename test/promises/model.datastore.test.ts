/**
 * The model of the four promises on the legacy Datastore emulator (the test runner starts it), with
 * fewer sequences than on the memory store: each known broken promise's sequence (model/scenarios.ts)
 * breaks the promise it names there too, and random sequences that leave out the known defects'
 * triggers hold every promise. Each sequence works in a namespace of its own.
 *
 * The sequences that fan out past a page (101 children, each delivered in turn) run in
 * model.datastore-wide.long.test.ts (`npm run test:long`): here they took 91 s of a 144 s file
 * (2026-11-29), and model.test.ts runs them on the memory store in `npm test`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KNOWN_DEFECTS, KNOWN_TRIGGERS } from '../../model/scenarios';
import { fansOutWide, knownDefectCases } from './known-defects';
import { describeFailure, Rig, runModel } from '../../model/run';

describe('the model of the four promises, on the legacy Datastore emulator', { timeout: 900_000 }, () => {
  describe('the known broken promises, each as a short sequence', () => {
    let rig: Rig;
    before(async () => { rig = await Rig.start('datastore'); });
    after(async () => { await rig.stop(); });

    knownDefectCases(KNOWN_DEFECTS.filter((d) => !fansOutWide(d)), () => rig);
  });

  it('holds every promise on 12 random sequences that leave out the known defects\' triggers (seed 7)', async () => {
    const result = await runModel({ seed: 7, runs: 12, store: 'datastore', without: KNOWN_TRIGGERS });
    assert.equal(result.failure, undefined, describeFailure(result));
    assert.equal(result.generated, 12);
  });
});
