/**
 * `npm run chaos` in small: the same harness, the same faults and the same invariants, on 30
 * chains of 4 steps with a fixed seed, with the workers run as Cloud Run runs them (frozen when
 * idle and scaled in; SIGTERM, a grace, then SIGKILL), in a child process that starts its own
 * Datastore emulator (so no other test's data is swept). A share of the chains fan out (children
 * failing by design, every policy, one nested fan-out). The figures the run prints are checked:
 * every chain is accounted for, each kind of fault and each platform event really happened, no
 * worker died unless stopped, and every invariant of the oracle holds: no step ran again unless an
 * overwrite alert names the attempt that lost it, no step was lost, no overwrite or failure went
 * unalerted, every join ran once, after its children settled, and saw each child's end, and the
 * run exits 0.
 */
import { chaosSuite } from './chaos-suite';

chaosSuite({ emulator: 'datastore', runTimeoutMs: 420_000 });
