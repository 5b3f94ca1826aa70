/**
 * The operator's actions on schedules and their view: pause, resume, run now (exactly once per
 * id), and the list of schedules with their next and last runs. Each change is one transaction on
 * the schedule's record (`transitions.ts` decides what it becomes).
 */
import { randomUUID } from 'node:crypto';
import { ConfigError } from '../errors/errors';
import type { Locks } from '../locks/locks';
import type { StoreReads } from '../store/reads';
import { kickoffChainId } from '../rules/kickoff-plan';
import { keyIdentity, keyPath } from '../keys/key-path';
import type { KickoffItem, ScheduleManyOptions, ScheduleManyResult } from '../chain/schedule-many-types';
import { cronTimes } from './cron-times';
import type { Declaration } from './declaration';
import type { ScheduleView } from './recurring-types';
import { readSchedule, SCHEDULE_KIND, SCHEDULE_UNINDEXED, scheduleKey, scheduleProperties, type ScheduleRecord } from './schedule-record';
import { paused, resumed, runNow, settledNow } from './transitions';

/** What the operator's actions use. */
export interface ScheduleOperatorParts {
  readonly locks: Pick<Locks, 'transact'>;
  readonly reads: Pick<StoreReads, 'listRecords' | 'listsRecords'>;
  readonly kickoff: (items: readonly KickoffItem[], options: ScheduleManyOptions) => Promise<ScheduleManyResult>;
  readonly clock: () => number;
  /** Where the schedules' records live. */
  readonly namespace: string;
}

/** What "run now" did. */
export interface RunNowResult {
  /** The id the run is known by (the one given, or a random one). */
  id: string;
  /** The time the run is for (the first call's, when the id was seen before). */
  at: Date;
  /** `started` (or found started by an earlier call with the id), or `busy` (the entity runs another chain), or `failed`. */
  outcome: 'started' | 'busy' | 'failed';
  /** Why it failed. */
  error?: string;
}

/** One page of schedules. */
export interface SchedulePage {
  schedules: ScheduleView[];
  cursor?: string;
}

/** Pauses schedule `name`; answers false when it was paused already. */
export async function pauseSchedule(parts: ScheduleOperatorParts, name: string): Promise<boolean> {
  return change(parts, name, (r) => (r.state === 'paused' ? undefined : paused(r)));
}

/** Resumes schedule `name` from its next tick after now; answers false when it was not paused. */
export async function resumeSchedule(parts: ScheduleOperatorParts, name: string): Promise<boolean> {
  const now = new Date(parts.clock());
  return change(parts, name, (r) => (r.state !== 'paused' ? undefined : resumed(r, cronTimes(r.spec.cron, r.spec.timeZone), now)));
}

/**
 * Starts a run of schedule `name` now, outside its ticks, exactly once per `id`: a call made again
 * with the same id (a confirm page submitted twice, a retry after a crash) finds the run the first
 * call started. The schedule must be declared by this code (its entity and payload are).
 */
export async function runScheduleNow(parts: ScheduleOperatorParts, d: Declaration | undefined, name: string, id: string = randomUUID()): Promise<RunNowResult> {
  if (!d) throw new ConfigError(`no schedule named ${JSON.stringify(name)} is declared by this code: declare it with locker.recurring() to run it now`);
  if (typeof id !== 'string' || id === '' || id.length > 100) throw new RangeError('a run-now id must be 1 to 100 characters');
  const now = new Date(parts.clock());
  const at = await parts.locks.transact(async (tx) => {
    const record = readSchedule(await tx.get(scheduleKey(name, parts.namespace)));
    if (!record) throw new RangeError(`no schedule named ${JSON.stringify(name)} is in the store yet (it is written by the first tick after it is declared)`);
    const decided = runNow(record, id, now);
    if (decided.record) tx.put(scheduleKey(name, parts.namespace), scheduleProperties(decided.record), SCHEDULE_UNINDEXED);
    return decided.at;
  });
  const tick = { name, at };
  const key = d.keyOf(tick);
  const kickoffId = `recurring-now:${name}:${id}`;
  const answer = await parts.kickoff([{ key, entity: d.entityOf(tick), path: d.spec.path, payload: d.payloadOf(tick) }], { kickoffId });
  const r = answer.results[0]!;
  const outcome = r.status;
  const error = r.status === 'failed' ? r.error.message : undefined;
  const run = { at, key: keyPath(key), namespace: key.namespace ?? '' };
  await change(parts, name, (record) => settledNow(record, id, run, {
    run, outcome, retry: false,
    ...(outcome === 'started' && { chain: kickoffChainId(kickoffId, keyIdentity(key)) }),
    ...(error !== undefined && { error: error.slice(0, 500) }),
  }, new Date(parts.clock())));
  return { id, at, outcome, ...(error !== undefined && { error }) };
}

/** One page of schedules, newest declared first. */
export async function listSchedules(parts: Pick<ScheduleOperatorParts, 'reads' | 'namespace'>, declared: ReadonlySet<string>, options: { limit?: number; cursor?: string } = {}): Promise<SchedulePage> {
  if (!parts.reads.listsRecords) throw new ConfigError('the schedules list needs a store with listRecords (DatastoreStore and MemoryStore have it)');
  const page = await parts.reads.listRecords({ kind: SCHEDULE_KIND, namespace: parts.namespace, newestBy: 'createdAt', limit: options.limit ?? 100, ...(options.cursor !== undefined && { cursor: options.cursor }) });
  const schedules = page.entities.flatMap(({ properties }) => {
    const r = readSchedule(properties);
    return r ? [viewOf(r, declared.has(r.name))] : [];
  });
  return page.cursor ? { schedules, cursor: page.cursor } : { schedules };
}

/** A record as the operator sees it. */
export function viewOf(r: ScheduleRecord, declaredHere: boolean): ScheduleView & { declaredHere: boolean } {
  const view: ScheduleView & { declaredHere: boolean } = {
    name: r.name, cron: r.spec.cron, timeZone: r.spec.timeZone, path: r.spec.path, overlap: r.spec.overlap, misfire: r.spec.misfire,
    state: r.state, started: r.started, skipped: r.skipped, declaredAt: r.declaredAt, declaredHere,
  };
  if (r.next && r.state === 'active') view.next = r.next;
  if (r.last) view.last = r.last;
  if (r.queued) view.queued = r.queued;
  return view;
}

/** Changes one record in a transaction; answers whether it wrote. */
async function change(parts: Pick<ScheduleOperatorParts, 'locks' | 'namespace'>, name: string, decide: (r: ScheduleRecord) => ScheduleRecord | undefined): Promise<boolean> {
  return parts.locks.transact(async (tx) => {
    const record = readSchedule(await tx.get(scheduleKey(name, parts.namespace)));
    if (!record) throw new RangeError(`no schedule named ${JSON.stringify(name)} is in the store`);
    const next = decide(record);
    if (!next || next === record) return false;
    tx.put(scheduleKey(name, parts.namespace), scheduleProperties(next), SCHEDULE_UNINDEXED);
    return true;
  });
}
