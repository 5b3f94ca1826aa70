/**
 * The batch kickoff, written once for `locker.scheduleMany()` and `ctx.fanOut()` (docs/design.md,
 * section 5, "Many kickoffs at once"): given jobs (an entity, the chain to start on it, its first
 * step, and the key of the record that says the chain was started), it runs the rounds and says
 * what became of each job. What differs between the two features is the marker (`KickoffMarking`):
 * a bulk kickoff's `LockerKickoff` record, a fan-out child's own record.
 *
 * A round: one lookup of the open jobs' entities and markers; the `kickoff` transition per entity
 * (`planKickoff`), keeping the alerts the entity still owes (`endStepAlerts`); one `replaceMany`
 * that keeps each entity's compare-and-swap, each marker riding in its entity's commit at the
 * version read; the previous step's record retired for each entity written. An entity that changed
 * meanwhile is read and decided again, up to {@link ROUNDS} times. A write that met a store fault
 * that may pass (unavailable, a deadline, contention) may have landed: its entity is read again
 * next round, and found holding the chain it is reported started (with the record written).
 *
 * A marker this call wrote beside an entity that was not written is the call's own and no evidence
 * (Datastore's non-transactional commit stores it anyway): read again, it is passed as `mine`, and
 * once the job ends without its chain started, undone (`unmark`, best effort). A store without
 * `readMany`/`replaceMany` gets one transaction per job, as `schedule()` runs it.
 */
import type { Key } from '@google-cloud/datastore';
import type { Dispatcher } from './dispatcher';
import type { Ledger } from './ledger';
import type { Locks } from '../locks/locks';
import type { Emit } from '../events/emit';
import type { ChainSettings } from './next-step';
import { ContentionError, StoreRejectedError, StoreUnavailableError } from '../errors/errors';
import { planKickoff, type Carry, type KickoffPlan } from '../rules/kickoff-plan';
import { endStepAlerts, NO_ALERTS } from '../rules/alert-markers';
import { readLock, type Lock } from '../rules/lock-fields';
import { newLedgerRecord, type NextStep } from '../rules/ledger-record';
import type { BatchLockWrite } from '../locks/locks';
import { settleReplaced, settleReplacedInTx } from '../fanout/child-end';
import { StepState, type ConditionalOutcome, type LedgerRecord, type Properties, type StoreTransaction, type VersionedRead } from '../types';

/** Reads and decisions of an entity that keeps changing under the call (or meeting store faults), before it is given up. */
export const ROUNDS = 5;
/** Jobs in transactions at once, per call, on a store without the batch operations. */
const TRANSACTIONS = 2;

/** The parts the rounds use, with the chain settings (the clock, the alert rules a kickoff keeps owed alerts by). */
/** The parts the rounds use (named one by one, not picked from `Parts`: `parts.ts` builds the fan-out part that uses the rounds). */
export interface RoundParts {
  readonly locks: Locks;
  readonly emit: Emit;
  readonly ledger: Ledger;
  readonly dispatcher: Dispatcher;
  readonly config: ChainSettings;
}

/** One kickoff to carry out. */
export interface KickoffJob {
  key: Key;
  /** The user's own properties to store on the entity (`entity` of the item). */
  entity: unknown;
  chain: string;
  step: NextStep;
  /** The record that says this chain was started on the entity: read in the entity's lookup, written in its commit. */
  markerKey: Key;
  /** The tracked work the chain belongs to (`lock_run`): `k:<kickoffId>` or `f:<fan-out id>`. */
  run?: string;
}

/** A marker's properties, as written. */
export interface MarkerProperties {
  properties: Properties;
  excludeFromIndexes: readonly string[];
}

/** What a feature passes the rounds: what its marker says, and how it is written and undone. */
export interface KickoffMarking<J extends KickoffJob> {
  /**
   * What the marker as read says: undefined when it lets the chain start; `{ seq }` when the chain
   * was started before (its first step) or the job is closed (`seq` 0): then it is never started.
   * `mine`: a started mark found is this call's own, from a write whose entity was not written.
   */
  recorded(job: J, marker: Properties | undefined, mine: boolean): { seq: number } | undefined;
  /** The marker to write with the kickoff, from the marker as read. */
  mark(job: J, marker: Properties | undefined, record: LedgerRecord, now: Date): MarkerProperties;
  /** Undoes in `tx` a mark this call wrote for a chain it did not start (the write's entity was not written). */
  unmark(tx: StoreTransaction, job: J, record: LedgerRecord): Promise<void>;
}

/** Why a job failed: its write refused by the store, a store fault (or an entity that kept changing), or its plan threw. */
export type FailCause = 'refused' | 'store' | 'plan';

/** What became of one job. */
export type KickoffOutcome =
  | { kind: 'started'; record: LedgerRecord }
  | { kind: 'own'; lock: Lock; live: boolean; seq: number }
  | { kind: 'busy'; seq: number; running: boolean }
  | { kind: 'failed'; cause: FailCause; error: Error };

/** What the call knows of one job across rounds. */
interface JobState {
  /** The record of this call's last write, which may be stored (records commit before their entities). */
  record?: LedgerRecord;
  /** A marker of this call may be stored beside an entity that was not written. */
  marked?: boolean;
  /** The last write met a store fault that may pass: it may have landed. */
  unsure?: boolean;
}

/**
 * Runs the rounds on `jobs`; `report` is told each job's outcome as soon as it is known (all are
 * told before this resolves), `onRound` once a round's outcomes were told.
 */
export async function kickoffRounds<J extends KickoffJob>(
  parts: RoundParts, jobs: readonly J[], marking: KickoffMarking<J>, report: (job: J, outcome: KickoffOutcome) => void, onRound?: () => void,
): Promise<void> {
  if (!parts.locks.batches) return eachTransaction(parts, jobs, marking, report, onRound);
  const states = new Map<J, JobState>(jobs.map((j) => [j, {}]));
  const done = (job: J, outcome: KickoffOutcome): void => {
    const state = states.get(job)!;
    if (outcome.kind !== 'started' && outcome.kind !== 'own' && !state.unsure) forget(parts, marking, job, state);
    report(job, outcome);
  };
  let open = jobs.slice();
  for (let round = 0; round < ROUNDS && open.length > 0; round++) {
    let reads: VersionedRead[];
    try {
      reads = await parts.locks.readMany([...open.map((j) => j.key), ...open.map((j) => j.markerKey)]); // 2 keys a job, one lookup
    } catch (error) {
      for (const job of open) done(job, { kind: 'failed', cause: 'store', error: asError(error) });
      open = [];
      break;
    }
    const now = new Date(parts.config.clock());
    const writes: BatchLockWrite[] = [];
    const writing: { job: J; previousTask: string | undefined }[] = [];
    const replacing: Promise<void>[] = [];
    const found: { job: J; outcome: KickoffOutcome; record: LedgerRecord }[] = [];
    open.forEach((job, i) => {
      const read = reads[i]!;
      const marker = reads[open.length + i]!;
      const state = states.get(job)!;
      const outcome = decide(parts, marking, job, state, read, marker, now);
      if (outcome.kind !== 'start') {
        const record = foundStarted(marking, job, outcome, marker, now);
        return record ? found.push({ job, outcome, record }) : done(job, outcome);
      }
      const mark = { key: job.markerKey, ...marking.mark(job, marker.properties, outcome.record, now), read: marker }; // rides in the entity's commit
      writes.push({ read, lock: outcome.lock, own: outcome.own, record: outcome.record, marker: mark });
      writing.push({ job, previousTask: outcome.previousTask });
      // A fan-out child's chain that ended unsettled is settled from its lock before the lock is replaced.
      if (read.properties) replacing.push(settleReplaced(parts, job.key, readLock(read.properties), encode(parts)));
    });
    // Chains found started by an earlier write: their records put back where a sweep cleared them.
    if (found.length > 0) {
      try {
        await parts.ledger.restore(found.map((f) => f.record), now);
        for (const f of found) done(f.job, f.outcome);
      } catch (error) {
        for (const f of found) done(f.job, { kind: 'failed', cause: 'store', error: asError(error) });
      }
    }
    await Promise.all(replacing);
    const outcomes: ConditionalOutcome[] = writes.length === 0 ? [] : await parts.locks.replaceMany(writes)
      .catch((error: unknown) => writes.map(() => ({ outcome: 'error' as const, error: asError(error) })));
    const next: J[] = [];
    outcomes.forEach((outcome, i) => {
      const { job, previousTask } = writing[i]!;
      const state = states.get(job)!;
      const record = writes[i]!.record;
      if (outcome.outcome === 'written') {
        started(parts, job.key, record, previousTask);
        return report(job, { kind: 'started', record });
      }
      // Not written (a conflict), or not known (a store fault): the record and the marker may be
      // stored. A write the store refused stored no marker (its entity's commit failed whole).
      if (outcome.outcome === 'error' && !transient(outcome.error)) return done(job, { kind: 'failed', cause: 'refused', error: outcome.error });
      Object.assign(state, { record, marked: true, unsure: outcome.outcome === 'error' });
      next.push(job);
    });
    onRound?.();
    open = next;
  }
  for (const job of open) {
    done(job, { kind: 'failed', cause: 'store', error: new StoreUnavailableError(`the entity changed under the kickoff, or the store kept failing, ${ROUNDS} times in a row; not started`) });
  }
  if (open.length > 0) onRound?.();
}

/** A job's plan in this round: an outcome (it is settled), or the kickoff to write. */
function decide<J extends KickoffJob>(
  parts: RoundParts, marking: KickoffMarking<J>, job: J, state: JobState, read: VersionedRead, marker: VersionedRead, now: Date,
): KickoffOutcome | Extract<KickoffPlan, { kind: 'start' }> {
  // An entity read without the chain: a write this call was unsure of did not land.
  if (state.unsure && readLock(read.properties ?? {}).chain !== job.chain) state.unsure = false;
  let plan: KickoffPlan;
  try {
    const recorded = marking.recorded(job, marker.properties, state.marked === true);
    plan = planKickoff(job.key, read.properties, job.entity, job.chain, job.step, now, carry(parts, now, job.run), recorded && { seq: recorded.seq });
  } catch (error) {
    return { kind: 'failed', cause: 'plan', error: asError(error) };
  }
  if (plan.kind === 'start') return plan;
  if (plan.kind === 'busy') return plan;
  if (plan.live && state.record?.seq === plan.seq) {
    // A write of this call landed (one answered by a store fault, or applied after its deadline
    // while the next round's write met it as a conflict): the chain is this call's start.
    const record = state.record;
    state.unsure = false;
    started(parts, job.key, record, undefined);
    return { kind: 'started', record };
  }
  return plan;
}

/**
 * The record of the chain's first step when the entity was found running it, scheduled at that
 * step: started by a write of this call answered by a store fault (`started`), or by an earlier
 * call (`own`, at the step its marker says it started). That write may have landed after a sweep
 * cleared its record (records commit before their entities), so the record is checked and put back.
 */
function foundStarted<J extends KickoffJob>(marking: KickoffMarking<J>, job: J, outcome: KickoffOutcome, marker: VersionedRead, now: Date): LedgerRecord | undefined {
  if (outcome.kind === 'started') return outcome.record;
  if (outcome.kind !== 'own' || !outcome.live || outcome.lock.state !== StepState.scheduled) return undefined;
  if (marking.recorded(job, marker.properties, false)?.seq !== outcome.lock.seq) return undefined;
  const record = newLedgerRecord(job.key, outcome.lock.seq, job.chain, job.step, now);
  return outcome.lock.task === record.id ? record : undefined;
}

/** A store without the batch operations: each job in a transaction of its own, as `schedule()` runs it. */
async function eachTransaction<J extends KickoffJob>(
  parts: RoundParts, jobs: readonly J[], marking: KickoffMarking<J>, report: (job: J, outcome: KickoffOutcome) => void, onRound?: () => void,
): Promise<void> {
  await eachLimited(jobs, TRANSACTIONS, async (job) => {
    try {
      const now = new Date(parts.config.clock());
      const plan = await parts.locks.transaction(job.key, async (tx) => {
        const [props, marker] = [await tx.get(job.key), await tx.get(job.markerKey)];
        const recorded = marking.recorded(job, marker, false);
        const p = planKickoff(job.key, props, job.entity, job.chain, job.step, now, carry(parts, now, job.run), recorded && { seq: recorded.seq });
        if (p.kind === 'start') {
          if (props) await settleReplacedInTx(tx, job.key, readLock(props), now, encode(parts));
          parts.locks.put(tx, job.key, props ?? {}, p.lock, p.own);
          const m = marking.mark(job, marker, p.record, now);
          tx.put(job.markerKey, m.properties, m.excludeFromIndexes);
          if (p.previousTask !== undefined) tx.deleteLedger(job.key, p.previousTask);
          tx.putLedger(p.record);
        }
        return p;
      });
      if (plan.kind === 'start') {
        started(parts, job.key, plan.record, undefined);
        report(job, { kind: 'started', record: plan.record });
      } else report(job, plan);
    } catch (error) {
      const e = asError(error);
      report(job, { kind: 'failed', cause: e instanceof StoreRejectedError ? 'refused' : transient(e) ? 'store' : 'plan', error: e });
    }
  });
  onRound?.();
}

function encode(parts: RoundParts): (key: Key) => string {
  return (key) => parts.dispatcher.encodeKey(key);
}

/**
 * A kickoff keeps the alerts still owed on the lock it starts from, as `schedule()` does
 * (`endStepAlerts`), and names the run that started the chain (`lock_run`), when the job has one.
 */
function carry(parts: RoundParts, now: Date, run: string | undefined): Carry {
  return (planned, from) => {
    const kept = endStepAlerts(parts.config, planned, from, NO_ALERTS, now);
    return run === undefined ? kept : { ...kept, lock: { ...kept.lock, run } };
  };
}

/** A chain written: reported scheduled, and the record of the entity's step before it (a failed chain's) retired. */
function started(parts: RoundParts, key: Key, record: LedgerRecord, previousTask: string | undefined): void {
  parts.emit('scheduled', { key, seq: record.seq, attempt: '', task: record.task, path: record.path });
  parts.ledger.retire(key, previousTask);
}

/**
 * A job that ended without its chain started: the record and the marker an earlier write of this
 * call may have stored beside an entity it did not write are removed (best effort: the sweep clears
 * such a record, and a marker left says "started" of a chain that was not).
 */
function forget<J extends KickoffJob>(parts: RoundParts, marking: KickoffMarking<J>, job: J, state: JobState): void {
  const record = state.record;
  if (!record) return;
  parts.ledger.retire(job.key, record.id);
  if (state.marked) void parts.locks.transact((tx) => marking.unmark(tx, job, record)).catch(() => undefined);
  state.record = undefined;
  state.marked = false;
}

/** A store fault that may pass (unavailable, a deadline, contention), as opposed to a refusal of the write itself. */
export function transient(error: Error): boolean {
  return error instanceof StoreUnavailableError || error instanceof ContentionError;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** Runs `fn` on every item, at most `limit` at a time. */
export async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
