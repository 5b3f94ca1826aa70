/**
 * The oracle's fan-out rules (promise f), judged on what the model saw, never on the library's
 * own records alone:
 *
 * - A join runs only once its fan-out joined: every run on the join route is shown `ctx.fanIn()`,
 *   with no child `pending` (every child settled, or the deadline passed).
 * - What the join is shown is true: each child listed once; the listing is every child the sealing
 *   attempt gave, and none no attempt gave; the counts are the listing's; `children({ state })`
 *   lists the same children as the pages do; and each child's state is how its chain ended as the
 *   model read it from the child's entity before the join ran (a chain seen completed is
 *   `succeeded`; one seen failed, `failed`; one seen cancelled, `cancelled`; one never seen ended,
 *   never `succeeded`), `timedOut` allowed once the deadline passed.
 * - A child's first step does its effect once, or each extra run is named by an alert, whatever
 *   seq it was started at (a child started again after its entity was deleted or reused runs at
 *   another seq, out of reach of promise b's per-step count).
 * - A step fails for good on its first run only when the run threw `PermanentError` or left a
 *   result the store refuses: a handler that throws anything else, the fanning step whose source
 *   threw part-way included, is retried (docs/guides/fan-out.md: "a parent step that fails or dies
 *   while adding children is retried, resumes").
 */
import { ROUTES } from './handler';
import { DEADLINE_MS } from './fan-out-plan';
import { stepName, type FanOutSeen, type JoinSeen, type LockSeen, type Observations } from './observations';
import type { Violation } from './oracle';
import { DELETED } from './world';

/** Every fan-out rule's violations. */
export function fanOutRules(o: Observations): Violation[] {
  return [...joinsShownTruth(o), ...childrenOnce(o), ...retriedNotFailed(o)];
}

function joinsShownTruth(o: Observations): Violation[] {
  const out: Violation[] = [];
  const f = (text: string): void => { out.push({ promise: 'f', text }); };
  for (const join of o.joins) {
    const where = `the join run ${short(join.attempt)} of ${stepName(join)}${join.forged ? ` (a request forged as ${join.forged})` : ''}`;
    if (!join.shown) {
      f(`${where} ran with ctx.fanIn() undefined: its fan-out had not joined`);
      continue;
    }
    const fan = fanOutOf(o, join);
    const shown = join.shown;
    const entities = shown.listing.map((c) => c.entity);
    const twice = [...new Set(entities.filter((e, i) => entities.indexOf(e) !== i))];
    if (twice.length > 0) f(`${where} was shown ${twice.length} child(ren) twice (${twice.slice(0, 4).join(', ')}${twice.length > 4 ? ', ...' : ''}): ${entities.length} listed for ${new Set(entities).size} children`);
    const tally: Record<string, number> = { total: entities.length, pending: 0, succeeded: 0, failed: 0, cancelled: 0, timedOut: 0 };
    for (const c of shown.listing) tally[c.state] = (tally[c.state] ?? 0) + 1;
    const wrong = Object.keys(tally).filter((k) => (shown.counts[k] ?? 0) !== tally[k]);
    if (wrong.length > 0) f(`${where} was shown counts ${fmt(shown.counts, wrong)} but its pages list ${fmt(tally, wrong)}`);
    for (const [state, listed] of Object.entries(shown.byState)) {
      const paged = shown.listing.filter((c) => c.state === state).map((c) => c.entity).sort().join();
      if ([...listed].sort().join() !== paged) f(`${where}: children({ state: '${state}' }) lists [${listed.join(', ')}], the pages list [${paged}]`);
    }
    if (shown.listing.some((c) => c.state === 'pending')) f(`${where} ran with child(ren) still pending: ${shown.listing.filter((c) => c.state === 'pending').map((c) => c.entity).join(', ')}`);
    if (!fan) continue;
    const missing = fan.children.filter((c) => !entities.includes(c));
    if (missing.length > 0) f(`${where} was not shown child(ren) ${missing.slice(0, 4).join(', ')} that the sealing attempt gave`);
    const stranger = entities.filter((c) => !fan.given.includes(c));
    if (stranger.length > 0) f(`${where} was shown child(ren) ${stranger.slice(0, 4).join(', ')} that no attempt gave`);
    const deadlinePassed = fan.policy === 'deadline' && join.now >= fan.sealedAt + DEADLINE_MS;
    for (const c of shown.listing) {
      const truth = endBefore(o.locks.get(c.entity) ?? [], childChainOf(c.entity, fan, o), join.op);
      const allowed = new Set<string>(truth === 'complete' ? ['succeeded'] : truth === 'failed' ? ['failed'] : truth === 'cancelled' ? ['cancelled'] : ['failed', 'cancelled']);
      if (deadlinePassed) allowed.add('timedOut');
      if (c.state !== 'pending' && !allowed.has(c.state)) {
        f(`${where} was shown child ${c.entity} ${c.state}; its chain ${truth === undefined ? 'was never seen ended' : `was seen ${truth}`} before the join ran`);
      }
    }
  }
  return out;
}

/** The fan-out whose join `join` is: the sealed fan-out of step `seq - 1` of the same chain. */
function fanOutOf(o: Observations, join: JoinSeen): FanOutSeen | undefined {
  return o.fanOuts.filter((f) => f.entity === join.entity && f.seq === join.seq - 1 && f.chain === join.chain).at(-1);
}

/** The chain of child `entity` of `fan`: the chain its first step's task named (`f<fan-out id>_…`, as the tasks the Locker made show it). */
function childChainOf(entity: string, fan: FanOutSeen, o: Observations): string | undefined {
  const prefix = `f${fan.id}_`;
  return o.tasks.find((t) => t.entity === entity && t.path === ROUTES.child && t.chain?.startsWith(prefix) === true)?.chain;
}

/** How chain `chain` last ended on an entity, as read before operation `op` (undefined: never seen ended). */
function endBefore(locks: readonly LockSeen[], chain: string | undefined, op: number): 'complete' | 'failed' | 'cancelled' | undefined {
  if (chain === undefined) return undefined;
  let end: 'complete' | 'failed' | 'cancelled' | undefined;
  for (const lock of locks) {
    if (lock.op >= op || lock.chain !== chain || lock.state === DELETED) continue; // a deletion after the chain ended changes nothing of how it ended
    if (lock.state === 'complete' || lock.state === 'failed' || lock.state === 'cancelled') end = lock.state;
    else end = undefined; // retried, or moved on to its next step
  }
  return end;
}

/** A child's first step (the child route, as a Locker's task sent it) does its effect once per chain, or each extra run is alerted. */
function childrenOnce(o: Observations): Violation[] {
  const out: Violation[] = [];
  const byChain = new Map<string, string[]>();
  for (const e of o.effects) {
    if (e.url !== ROUTES.child || e.chain === undefined || e.forged !== undefined) continue;
    if (!byChain.has(e.chain)) byChain.set(e.chain, []);
    const list = byChain.get(e.chain)!;
    if (!list.includes(`${e.attempt} ${stepName(e)}`)) list.push(`${e.attempt} ${stepName(e)}`);
  }
  const named = new Set(o.received.map((a) => a.previousAttempt));
  for (const [chain, runs] of byChain) {
    if (runs.length < 2) continue;
    // Runs of one start of the chain whose alert was owed on an entity the app then deleted are (b)'s and (c)'s case (not counted);
    // a run after the chain was seen ended is a start again, counted whatever happened to the entity.
    const effects = o.effects.filter((e) => e.chain === chain && e.url === ROUTES.child && e.forged === undefined);
    const locks = o.locks.get(effects[0]!.entity) ?? [];
    const startedAgain = effects.some((e) => locks.some((l) => l.chain === chain && l.op < e.op && (l.state === 'complete' || l.state === 'failed' || l.state === 'cancelled')));
    if (!startedAgain && locks.some((l) => l.state === DELETED)) continue;
    const unnamed = runs.filter((r) => !named.has(r.split(' ')[0]));
    if (unnamed.length > 1) out.push({ promise: 'f', text: `fan-out child chain ${chain.slice(0, 12)}… did its first step's effect ${runs.length} times (${runs.map((r) => `${short(r.split(' ')[0]!)} at ${r.split(' ')[1]}`).join(', ')}); no alert that reached a person names ${unnamed.slice(0, -1).map((r) => short(r.split(' ')[0]!)).join(', ')}` });
  }
  return out;
}

/** A step failed for good on its first run by an error that is not `PermanentError` nor a refused result: it was owed retries. */
function retriedNotFailed(o: Observations): Violation[] {
  const out: Violation[] = [];
  if (o.maxRetries < 2) return out;
  for (const failure of o.failed) {
    const run = o.runs.find((r) => r.attempt === failure.attempt && failure.attempt !== '');
    if (!run || (run.finish !== 'throw' && run.finish !== 'fanout')) continue;
    const earlier = o.runs.filter((r) => r.entity === run.entity && r.seq === run.seq && r.chain === run.chain && r.op <= run.op && r.attempt !== run.attempt);
    const takenOver = o.overwritten.some((w) => w.entity === run.entity && w.seq === run.seq);
    if (earlier.length === 0 && !takenOver) {
      out.push({ promise: 'f', text: `step ${stepName(run)} failed for good on its first run (attempt ${short(run.attempt)}, ${run.finish === 'fanout' ? 'a fanning step whose fanOut() threw' : 'a handler that threw'}); maxRetries is ${o.maxRetries}` });
    }
  }
  return out;
}

function fmt(counts: Record<string, number>, keys: readonly string[]): string {
  return keys.map((k) => `${k} ${counts[k] ?? 0}`).join(', ');
}

function short(attempt: string): string {
  return attempt.slice(0, 8);
}
