/**
 * The known defects' sequences that fan out past a page (a page of 100 children and one more, each
 * delivered in turn), on the legacy Datastore emulator: `npm run test:long` only, as they cost most
 * of model.datastore.test.ts's time; each must hold every promise, as it does on the memory store
 * in model.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KNOWN_DEFECTS } from '../../model/scenarios';
import { Rig } from '../../model/run';
import { fansOutWide, knownDefectCases } from './known-defects';

const WIDE = KNOWN_DEFECTS.filter(fansOutWide);

describe('the model\'s wide fan-out sequences, on the legacy Datastore emulator', { timeout: 600_000 }, () => {
  let rig: Rig;
  before(async () => { rig = await Rig.start('datastore'); });
  after(async () => { await rig.stop(); });

  it('has such sequences (defects 37.1 and 37.6 fan out past a page)', () => {
    assert.deepEqual(WIDE.map((d) => d.id), ['37.1', '37.6']);
  });

  knownDefectCases(WIDE, () => rig);
});
