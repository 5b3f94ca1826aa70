/**
 * Which chains of a chaos run fan out, drawn from the seed alone, so the workers (which run the
 * fan-outs) and the oracle (which judges them) agree without telling each other anything.
 *
 * A share (`fanOutShare`) of the chains fan out at one of their steps (not the last): that step
 * records its effect, then calls `ctx.fanOut()` with `fanOutChildren` children on entities of
 * their own, with a policy (all settled, all succeeded, or one failure tolerated) and the join at
 * `/join`, which runs as the chain's next step and continues the chain with `/step`. Each child is
 * a chain of {@link CHILD_STEPS} steps (`/child`) that sets a small result at its last step, or
 * fails for good at one of them (`fanOutChildFailRate`, whatever the faults). In about a third of
 * the fan-outs, the first child fans out itself (nested): two grandchildren, its join at
 * `/child-join`, which sets the child's result from what it saw.
 */
import { chance } from './random';

/** Steps of every child chain (a nested child: its fan-out, then its join). */
export const CHILD_STEPS = 2;

/** Grandchildren of a nested fan-out. */
const GRANDCHILDREN = 2;

/** A fan-out's policy, as handed to `ctx.fanOut()` (the library's `FanOutPolicy`, without a deadline). */
export interface PlannedPolicy {
  require?: 'settled' | 'succeeded';
  tolerate?: number;
}

/** One child of a planned fan-out. */
export interface PlannedChild {
  /** The child entity's key name (kind `ChaosChain`). */
  name: string;
  /** The step at which its handler throws `PermanentError` (before its effect), if it fails by design. */
  failsAt?: number;
  /** Its own fan-out, when it nests one. */
  nested?: FanOutPlan;
}

/** One planned fan-out: who fans out, at which step, to whom, under which policy. */
export interface FanOutPlan {
  /** The key name of the chain that fans out (a top-level chain, or a nested child). */
  parent: string;
  /** The step that fans out. */
  fanAt: number;
  /** The join's step: the next one. */
  joinSeq: number;
  /** The join's handler path. */
  joinPath: '/join' | '/child-join';
  policy: PlannedPolicy;
  children: PlannedChild[];
}

/** What the plan is drawn from. */
export interface PlanOptions {
  seed: number;
  steps: number;
  fanOutShare: number;
  fanOutChildren: number;
  fanOutChildFailRate: number;
}

/** The fan-outs of the run, by the key name of the chain that fans out (nested ones included). */
export function fanOutPlans(names: readonly string[], o: PlanOptions): Map<string, FanOutPlan> {
  const plans = new Map<string, FanOutPlan>();
  if (o.steps < 2 || o.fanOutChildren < 1) return plans;
  for (const name of names) {
    if (chance(o.seed, 'fan-out', name) >= o.fanOutShare) continue;
    const fanAt = 1 + Math.floor(chance(o.seed, 'fan-out-at', name) * (o.steps - 1));
    const pick = chance(o.seed, 'fan-out-policy', name);
    const policy: PlannedPolicy = pick < 1 / 3 ? {} : pick < 2 / 3 ? { require: 'succeeded' } : { tolerate: 1 };
    const nests = chance(o.seed, 'fan-out-nests', name) < 1 / 3;
    const children = Array.from({ length: o.fanOutChildren }, (_, i): PlannedChild => {
      const child = `${name}.f${i}`;
      if (i === 0 && nests) {
        const nested: FanOutPlan = {
          parent: child, fanAt: 1, joinSeq: 2, joinPath: '/child-join', policy: {},
          children: Array.from({ length: GRANDCHILDREN }, (_, j) => plannedChild(`${child}.g${j}`, o)),
        };
        plans.set(child, nested);
        return { name: child, nested };
      }
      return plannedChild(child, o);
    });
    plans.set(name, { parent: name, fanAt, joinSeq: fanAt + 1, joinPath: '/join', policy, children });
  }
  return plans;
}

function plannedChild(name: string, o: PlanOptions): PlannedChild {
  if (chance(o.seed, 'child-fails', name) >= o.fanOutChildFailRate) return { name };
  return { name, failsAt: 1 + Math.floor(chance(o.seed, 'child-fails-at', name) * CHILD_STEPS) };
}
