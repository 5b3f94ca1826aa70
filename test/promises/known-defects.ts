/** The known defects' sequences as test cases, shared by the model's test files on every store. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { DeliverOf } from '../../model/commands';
import type { KnownDefect } from '../../model/scenarios';
import { runSequence, type Rig } from '../../model/run';
import { PROMISES } from '../../model/oracle';

/** Whether a delivery of `defect`'s sequence runs a wide fan-out (a page of 100 children and one more): the slow ones on an emulator. */
export function fansOutWide(defect: KnownDefect): boolean {
  return defect.commands().some((c) => c instanceof DeliverOf && c.plan.fan?.wide === true);
}

/** One case per defect, run on `rig()`: a fixed one holds every promise, an open one breaks the promise it names. */
export function knownDefectCases(defects: readonly KnownDefect[], rig: () => Rig): void {
  for (const defect of defects) {
    const name = `defect ${defect.id}: ${defect.title}`;
    it(defect.fixed ? `${name}: fixed, every promise holds` : `${name}: breaks (${defect.promise}) ${PROMISES[defect.promise]}`, async () => {
      const { violations } = await runSequence(rig(), defect.config, defect.commands());
      if (defect.fixed) assert.deepEqual(violations, [], 'a fixed defect breaks no promise');
      else assert.ok(violations.some((v) => v.promise === defect.promise), `the oracle finds (${defect.promise}) broken; it found ${JSON.stringify(violations)}`);
    });
  }
}
