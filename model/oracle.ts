/**
 * The oracle: the four promises of the README, checked on what the model saw (observations.ts),
 * never on what the library says of itself alone. A violation names the promise and the step.
 *
 * - (a) Every committed step ran to an end: no entity is left with a step scheduled once the
 *   sequence was brought to quiet, and every step the model saw committed ran, failed for good or
 *   was cancelled.
 * - (b) Every effect happened once, or each extra run is named by an alert: of the attempts that
 *   did a step's effect, all but one are named (as the attempt overwritten, or failed) by an alert
 *   of that step that reached a person.
 * - (c) Every alert claimed reached the alerter at least once, with a stable id: each claim the
 *   store showed (`lock_alerts`), each takeover and each failure the Locker reported, reached a
 *   person; and an alert's id is the same every time it is given, and names one event.
 * - (d) No `kickoffId` started two chains on one entity: `scheduleMany()` never answered
 *   `started` without `resumed` twice for one id and one entity.
 * - (e) (where the context has `ctx.idempotencyKey`) every run of one step of one chain was given
 *   the same key, and no two steps share one.
 * - (f) Fan-out keeps them: the join runs once its fan-out joined, and is shown each child once
 *   with its true end; a child's first step runs once unless alerted; a step that threw (a
 *   fanning step whose source threw included) is retried (oracle-fan-out.ts).
 * - (r) Recurring work: one chain per (schedule, scheduled time) at most, no run the misfire and
 *   overlap policies rule out, no time a tick planned left unrun, run-now once per id
 *   (oracle-recurring.ts).
 * - (s) A forged or replayed request never runs a handler: every run's request (entity, step,
 *   chain, route with its query, body) is one the Locker made a task of.
 */
import type { AlertEvent } from '../src/types';
import { stepName, type Observations, type StepRef } from './observations';
import { fanOutRules } from './oracle-fan-out';
import { recurringRules } from './oracle-recurring';
import { DELETED } from './world';

/** Which promise broke. */
export type Promise4 = 'a' | 'b' | 'c' | 'd' | 'e' | 'f' | 'r' | 's';

/** One broken promise. */
export interface Violation {
  promise: Promise4;
  text: string;
}

/** What each promise says, for reports. */
export const PROMISES: Readonly<Record<Promise4, string>> = Object.freeze({
  a: 'every committed step ran to an end',
  b: 'every effect happened once, or each extra run is named by an alert',
  c: 'every alert claimed reached the alerter at least once, each id stable',
  d: 'no kickoffId started two chains on one entity',
  e: 'ctx.idempotencyKey is stable per step per chain',
  f: 'fan-out: the join runs once, after every child settled, shown each child once as it ended; a child runs once unless alerted; a step that threw is retried',
  r: 'recurring work: one chain per (schedule, time) at most, none run the policies rule out, none missed, run-now once per id',
  s: 'a forged or replayed request never runs a handler',
});

/** An alert owed: its reason (as the claim names it), step and the attempt it names. */
interface Owed extends StepRef {
  reason: string;
  previous: string;
  why: string;
}

/** Checks every promise; an empty list means all held. */
export function judge(o: Observations): Violation[] {
  return [...ranToAnEnd(o), ...onceOrAlerted(o), ...alertsArrived(o), ...kickoffsOnce(o), ...idempotencyKeys(o), ...fanOutRules(o), ...recurringRules(o), ...onlyTasksRun(o)];
}

/** Every run's request is one a Locker made a task of: its entity, step, chain, route (query included) and body. */
function onlyTasksRun(o: Observations): Violation[] {
  const out: Violation[] = [];
  const made = new Set(o.tasks.map((t) => requestId(t.entity, t.seq, t.chain, t.path, t.body)));
  for (const run of o.runs) {
    if (made.has(requestId(run.entity, run.seq, run.chain, run.url, run.body))) continue;
    out.push({ promise: 's', text: `a request ${run.forged ? `forged as ${run.forged} ` : ''}ran the handler at ${run.url} on step ${stepName(run)} (body ${run.body === '' ? 'none' : run.body}); no task was made for that route and body at that step` });
  }
  return out;
}

function requestId(entity: string, seq: number, chain: string | undefined, url: string, body: string): string {
  let normal = body;
  try { normal = body === '' ? '' : JSON.stringify(JSON.parse(body)); } catch { /* kept as sent */ }
  return `${entity}#${seq} ${chain ?? ''} ${url} ${normal}`;
}

function ranToAnEnd(o: Observations): Violation[] {
  const out: Violation[] = [];
  const ended = new Set<string>([...o.effects, ...o.failed, ...o.cancelled].map(stepName));
  for (const [entity, locks] of o.locks) {
    for (const lock of locks) if (lock.state === 'failed' || lock.state === 'cancelled') ended.add(stepName({ entity, seq: lock.seq }));
    // A step the lock was later seen past finished (a fanning step's run may die after its seal, before its effect).
    // Not on a schedule's run entity: no run there fans out, and a tick's kickoff that passed a step
    // still scheduled is the loss (a) is there to find.
    const furthest = o.recurring.runEntities.has(entity) ? 0 : Math.max(0, ...locks.filter((l) => l.state !== DELETED).map((l) => l.seq));
    for (const step of o.committed) if (step.entity === entity && step.seq < furthest) ended.add(stepName(step));
    // The app deleted the entity: the steps committed on it until then are gone with it.
    const deleted = Math.max(0, ...locks.filter((l) => l.state === DELETED).map((l) => l.seq));
    for (const step of o.committed) if (step.entity === entity && step.seq <= deleted) ended.add(stepName(step));
    const last = locks.at(-1);
    if (last?.state === 'scheduled') out.push({ promise: 'a', text: `${entity} still has step ${last.seq} scheduled after deliveries and sweeps ran until quiet` });
  }
  for (const step of unique(o.committed)) {
    if (!ended.has(stepName(step))) out.push({ promise: 'a', text: `step ${stepName(step)} was committed but never ran, failed or was cancelled` });
  }
  return out;
}

function onceOrAlerted(o: Observations): Violation[] {
  const out: Violation[] = [];
  // A step of one chain (an entity the app deleted starts its seqs again, on a new chain).
  const byStep = groupBy(o.effects, (e) => `${stepName(e)} ${e.chain ?? ''}`);
  for (const [stepOfChain, effects] of byStep) {
    const step = stepOfChain.split(' ')[0]!;
    const attempts = [...new Set(effects.map((e) => e.attempt))];
    if (attempts.length < 2) continue;
    if (deletedSince(o, effects[0]!)) continue; // the alert naming the extra run was owed on the entity the app deleted: see (c)
    const named = new Set(o.received.filter((a) => stepName(alertStep(a)) === step).map((a) => a.previousAttempt));
    const unnamed = attempts.filter((a) => !named.has(a));
    if (unnamed.length > 1) {
      out.push({ promise: 'b', text: `step ${step} did its effect ${attempts.length} times (attempts ${attempts.map(short).join(', ')}); no alert that reached a person names ${unnamed.slice(0, -1).map(short).join(', ')}` });
    }
  }
  return out;
}

function alertsArrived(o: Observations): Violation[] {
  const out: Violation[] = [];
  for (const owed of owedAlerts(o)) {
    if (deletedSince(o, owed)) continue; // the app deleted the entity, and the step's alerts with it
    const arrived = o.received.some((a) => a.key.name === owed.entity && a.seq === owed.seq && a.previousAttempt === owed.previous && (!KNOWN_REASONS.has(owed.reason) || a.reason === owed.reason));
    if (!arrived) out.push({ promise: 'c', text: `the ${owed.reason} alert of step ${stepName(owed)} naming attempt ${short(owed.previous)} (${owed.why}) never reached the alerter` });
  }
  // A failure whose entity the app deleted at that step or after: its failure alert, owed on the entity, went with it (as above).
  for (const [step, failures] of groupBy(o.failed.filter((f) => !deletedSince(o, f)), stepName)) {
    const ids = new Set(o.received.filter((a) => a.reason === 'failure' && stepName(alertStep(a)) === step).map((a) => a.id));
    if (ids.size < failures.length) out.push({ promise: 'c', text: `step ${step} failed for good ${failures.length} time(s); ${ids.size} failure alert(s) reached the alerter` });
  }
  const idsOf = new Map<string, Set<string>>();
  const eventsOf = new Map<string, Set<string>>();
  for (const a of o.given) {
    const what = `${a.reason} ${stepName(alertStep(a))} ${short(a.previousAttempt ?? '')}`;
    if (!idsOf.has(what)) idsOf.set(what, new Set());
    idsOf.get(what)!.add(a.id);
    if (!eventsOf.has(a.id)) eventsOf.set(a.id, new Set());
    eventsOf.get(a.id)!.add(what);
  }
  for (const [what, ids] of idsOf) if (ids.size > 1) out.push({ promise: 'c', text: `the alert "${what}" was given under ${ids.size} ids` });
  for (const [id, events] of eventsOf) if (events.size > 1) out.push({ promise: 'c', text: `alert id ${id} names ${events.size} events: ${[...events].join('; ')}` });
  return out;
}

const KNOWN_REASONS: ReadonlySet<string> = new Set(['overwrite', 'failure']);

/** Whether the app deleted `step`'s entity at that step or after it. */
function deletedSince(o: Observations, step: StepRef): boolean {
  return (o.locks.get(step.entity) ?? []).some((l) => l.state === DELETED && l.seq >= step.seq);
}

/** Every alert owed: each claim the store showed, and each takeover the Locker reported. */
function owedAlerts(o: Observations): Owed[] {
  const owed = new Map<string, Owed>();
  const add = (x: Owed): void => {
    const id = `${x.reason} ${stepName(x)} ${x.previous}`;
    if (!owed.has(id)) owed.set(id, x);
  };
  for (const [entity, locks] of o.locks) {
    for (const lock of locks) {
      for (const marker of lock.alerts) {
        const claim = parseMarker(marker);
        if (claim) add({ entity, ...claim, why: `claimed on the entity as ${marker}` });
      }
    }
  }
  for (const w of o.overwritten) add({ entity: w.entity, seq: w.seq, reason: 'overwrite', previous: w.previous, why: `attempt ${short(w.attempt)} took the lease over` });
  return [...owed.values()];
}

/** A claim marker (`reason:seq:previous[:next]`, `:sent` when marked sent) as the alert it owes. */
export function parseMarker(marker: string): { reason: string; seq: number; previous: string } | undefined {
  const bare = marker.endsWith(':sent') ? marker.slice(0, -':sent'.length) : marker;
  const [reason, seqText, ...rest] = bare.split(':');
  const seq = Number(seqText);
  if (!reason || !Number.isSafeInteger(seq)) return undefined;
  let previous = rest.join(':');
  if (reason === 'overwrite') previous = previous.slice(0, Math.max(0, previous.lastIndexOf(':')));
  return previous === '' ? undefined : { reason, seq, previous };
}

function kickoffsOnce(o: Observations): Violation[] {
  const out: Violation[] = [];
  const starts = groupBy(o.kickoffs.filter((k) => k.status === 'started' && !k.resumed), (k) => `${k.kickoffId} ${k.entity}`);
  for (const [what, list] of starts) {
    if (list.length > 1) out.push({ promise: 'd', text: `scheduleMany() with kickoffId ${what.split(' ')[0]} started a new chain on ${what.split(' ')[1]} ${list.length} times` });
  }
  return out;
}

function idempotencyKeys(o: Observations): Violation[] {
  const out: Violation[] = [];
  const keyed = o.runs.filter((r) => r.idempotencyKey !== undefined);
  const byStep = groupBy(keyed, (r) => `${stepName(r)} ${r.chain ?? ''}`);
  const owners = new Map<string, string>();
  for (const [step, runs] of byStep) {
    const keys = new Set(runs.map((r) => r.idempotencyKey!));
    if (keys.size > 1) out.push({ promise: 'e', text: `the runs of step ${step} were given ${keys.size} idempotency keys` });
    for (const key of keys) {
      const owner = owners.get(key);
      if (owner !== undefined && owner !== step) out.push({ promise: 'e', text: `steps ${owner} and ${step} were given one idempotency key` });
      owners.set(key, step);
    }
  }
  return out;
}

function alertStep(a: AlertEvent): StepRef {
  return { entity: a.key.name ?? String(a.key.id), seq: a.seq };
}

function short(attempt: string): string {
  return attempt.slice(0, 8);
}

function unique(steps: StepRef[]): StepRef[] {
  return [...new Map(steps.map((s) => [stepName(s), s])).values()];
}

function groupBy<T>(items: readonly T[], by: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = by(item);
    if (!out.has(k)) out.set(k, []);
    out.get(k)!.push(item);
  }
  return out;
}
