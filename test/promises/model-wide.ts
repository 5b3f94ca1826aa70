/** Which known defects' sequences fan out past a page: the slow ones on an emulator. */
import { DeliverOf } from '../../model/commands';
import type { KnownDefect } from '../../model/scenarios';

/** Whether a delivery of `defect`'s sequence runs a wide fan-out (a page of 100 children and one more). */
export function fansOutWide(defect: KnownDefect): boolean {
  return defect.commands().some((c) => c instanceof DeliverOf && c.plan.fan?.wide === true);
}
