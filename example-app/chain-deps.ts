/** What the example's chains (`chains.ts`, `line-order.ts`) need from the rest of the app. */
import type { Locker, Queue } from '../src/index';
import type { Records } from './records';

/** What the chains need from the rest of the app. */
export interface ChainDeps {
  locker: Locker;
  /** The Locker's queue, for the forged duplicate. */
  queue: Queue;
  records: Records;
  /** Where the app prints one line per step. */
  say: (line: string) => void;
}
