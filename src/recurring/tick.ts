/**
 * One tick of recurring work (`locker.tick()`, run by every `sweep()`): writes this code's
 * declarations, reads the schedules due (`due <= now`, a keys-only query), plans each in a
 * transaction (`planTick`: the runs to start go into the record's `pending` and its next tick
 * advances, in one commit), starts every planned run through the bulk kickoff, and settles the
 * records (`settled`). Every store round is batched: the declarations are read in batched
 * lookups (and written only when new, changed or due a refresh), and each page of 500 due
 * schedules is read in one lookup, planned and settled in transactions of 20 (8 at a time), and
 * started by one bulk kickoff per scheduled time.
 *
 * Exactly once per (schedule, tick): a run's kickoff id is its scheduled time
 * (`recurring@<ISO time>`), so its chain id is derived from that time and its entity's key, and
 * the bulk kickoff's record of each chain it started keeps a tick delivered twice, two instances
 * ticking at once, or a tick resumed after a crash (its runs still `pending`) from starting the
 * run again. A tick that runs out of its budget leaves the rest due: the next tick goes on.
 *
 * Each schedule's record is an entity group of its own, and legacy Datastore (and its emulator)
 * takes at most 25 entity groups in one transaction: every transaction here holds at most
 * `TICK_GROUPS` records.
 */
import type { Key } from '@google-cloud/datastore';
import type { Locks } from '../locks/locks';
import type { StoreReads } from '../store/reads';
import { getAll } from '../store/transaction-reads';
import { kickoffChainId } from '../rules/kickoff-plan';
import { readLock } from '../rules/lock-fields';
import { keyIdentity, keyPath } from '../keys/key-path';
import { parseKeyPath } from '../keys/key-path-parse';
import { ConfigError, ContentionError, StoreUnavailableError } from '../errors/errors';
import type { KickoffItem, ScheduleManyOptions, ScheduleManyResult } from '../chain/schedule-many-types';
import type { Logger } from '../types';
import type { Declaration } from './declaration';
import type { TickResult } from './recurring-types';
import { readSchedule, SCHEDULE_KIND, SCHEDULE_UNINDEXED, scheduleKey, scheduleProperties, type PlannedRun } from './schedule-record';
import { declared, failedBeforeStart, planTick, removed, settled, type RunOutcome } from './transitions';

/** Schedules read, planned, started (one bulk kickoff per scheduled time) and settled per round: a page of the due query. */
export const TICK_BATCH = 500;
/** Schedule records per transaction: legacy Datastore takes at most 25 entity groups in one. */
export const TICK_GROUPS = 20;
/** Transactions of one round in flight at once. */
const TICK_CONCURRENCY = 8;
/** Keys the due query asks for at once. */
const DUE_PAGE = 500;

/** What a tick uses. */
export interface TickParts {
  readonly locks: Pick<Locks, 'transact'>;
  readonly reads: Pick<StoreReads, 'getMany' | 'findKeys' | 'findsKeys'>;
  /** The bulk kickoff (`locker.scheduleMany()`). */
  readonly kickoff: (items: readonly KickoffItem[], options: ScheduleManyOptions) => Promise<ScheduleManyResult>;
  readonly clock: () => number;
  readonly logger: Logger;
  /** Where the schedules' records live. */
  readonly namespace: string;
}

/** The kickoff id of the runs of every schedule due at `at`. */
export function tickKickoffId(at: Date): string {
  return `recurring@${at.toISOString()}`;
}

/** Runs one tick; see the file's comment. */
export async function tick(parts: TickParts, declarations: ReadonlyMap<string, Declaration>, budgetMs: number): Promise<TickResult> {
  const began = parts.clock();
  const now = new Date(began);
  const result: TickResult = { due: 0, started: 0, skipped: 0, queued: 0, failed: 0, removed: [], declared: 0, partial: false };
  if (!parts.reads.findsKeys) throw new ConfigError('recurring work needs a store that finds keys by a property (findKeys): DatastoreStore and MemoryStore have it');
  result.declared = await writeDeclarations(parts, declarations, now);
  const seen = new Set<string>();
  // A tick always handles one round at least, whatever its budget: every tick makes progress; it
  // says `partial` only when schedules are still due once its budget ran out.
  for (let first = true; ; first = false) {
    const keys = (await parts.reads.findKeys({ kind: SCHEDULE_KIND, namespace: parts.namespace, property: 'due', atOrBefore: now, limit: DUE_PAGE }))
      .filter((key) => typeof key.name === 'string' && !seen.has(key.name));
    if (keys.length === 0) break;
    if (!first && parts.clock() - began >= budgetMs) {
      result.partial = true;
      break;
    }
    for (const key of keys) seen.add(key.name as string);
    for (let i = 0; i < keys.length; i += TICK_BATCH) {
      await tickBatch(parts, declarations, keys.slice(i, i + TICK_BATCH), now, result);
      if (parts.clock() - began >= budgetMs && i + TICK_BATCH < keys.length) {
        result.partial = true;
        return result;
      }
    }
  }
  return result;
}

/** Writes the records of declarations that are new, changed, or declared again; answers how many. */
async function writeDeclarations(parts: TickParts, declarations: ReadonlyMap<string, Declaration>, now: Date): Promise<number> {
  // Read outside a transaction first (batched lookups): most ticks find every record as declared
  // and write nothing. Only the ones to write are read again and written, in transactions.
  const every = [...declarations.values()];
  const found = await parts.reads.getMany(every.map((d) => scheduleKey(d.name, parts.namespace)));
  const all = every.filter((d, i) => declared(readSchedule(found[i]), d, now) !== undefined);
  const written = await eachGroup(all, (batch) => parts.locks.transact(async (tx) => {
    const found = await getAll(tx, batch.map((d) => scheduleKey(d.name, parts.namespace)));
    let n = 0;
    batch.forEach((d, j) => {
      const next = declared(readSchedule(found[j]), d, now);
      if (!next) return;
      tx.put(scheduleKey(d.name, parts.namespace), scheduleProperties(next), SCHEDULE_UNINDEXED);
      n += 1;
    });
    return n;
  }));
  return written.reduce((a, b) => a + b, 0);
}

/** A run to start, with its declaration. */
interface Start {
  name: string;
  run: PlannedRun;
  d: Declaration;
}

/** Plans, starts and settles one batch of due schedules. */
async function tickBatch(parts: TickParts, declarations: ReadonlyMap<string, Declaration>, keys: readonly Key[], now: Date, result: TickResult): Promise<void> {
  // Whether each schedule's last run still runs: read outside the transaction, so a busy chain's
  // writes never abort it (a run seen live that ends meanwhile is judged live: skipped or queued).
  const before = (await parts.reads.getMany(keys)).map(readSchedule);
  const lastKeys = before.map((r) => (r?.last?.outcome === 'started' && r.last.chain && r.last.key !== undefined ? safeKey(r.last.key, r.last.namespace ?? '') : undefined));
  const present = lastKeys.filter((k): k is Key => k !== undefined);
  const locks = present.length > 0 ? await parts.reads.getMany(present) : [];
  const liveByName = new Map<string, { chain: string; live: boolean }>();
  let at = 0;
  before.forEach((r, i) => {
    if (!r || !lastKeys[i]) return;
    const props = locks[at++];
    const lock = props ? readLock(props) : undefined;
    liveByName.set(r.name, { chain: r.last!.chain!, live: lock !== undefined && lock.chain === r.last!.chain && lock.state === 'scheduled' });
  });

  const starts: Start[] = [];
  const plans: Planned = { due: 0, skipped: 0, queued: 0, failed: 0, removed: [] };
  const groups = await eachGroup(keys, async (group) => {
    const groupStarts: Start[] = [];
    return { planned: await planGroup(parts, declarations, group, now, liveByName, groupStarts), groupStarts };
  });
  for (const { planned, groupStarts } of groups) {
    plans.due += planned.due;
    plans.skipped += planned.skipped;
    plans.queued += planned.queued;
    plans.failed += planned.failed;
    plans.removed.push(...planned.removed);
    starts.push(...groupStarts);
  }
  result.due += plans.due;
  result.skipped += plans.skipped;
  result.queued += plans.queued;
  result.failed += plans.failed;
  result.removed.push(...plans.removed);
  for (const name of plans.removed) parts.logger.warn('a schedule in the store is not declared by this code: it no longer runs (declare it again to resume it)', { schedule: name });
  if (starts.length === 0) return;

  const outcomes = await startRuns(parts, starts);
  const overlapOf = new Map(starts.map((s) => [s.name, s.d.spec.overlap]));
  for (const [name, o] of outcomes) {
    for (const run of o) {
      if (run.outcome === 'started') result.started += 1;
      else if (run.outcome === 'failed') result.failed += 1;
      // Busy: the entity runs another chain; queued under `queue` (see `settled`), else skipped.
      else if (overlapOf.get(name) === 'queue') result.queued += 1;
      else result.skipped += 1;
    }
  }
  await eachGroup([...outcomes.keys()], (names) => parts.locks.transact(async (tx) => {
    const found = await getAll(tx, names.map((name) => scheduleKey(name, parts.namespace)));
    found.forEach((props, i) => {
      const record = readSchedule(props);
      if (!record) return;
      const next = settled(record, outcomes.get(names[i]!)!, now);
      if (next !== record) tx.put(scheduleKey(record.name, parts.namespace), scheduleProperties(next), SCHEDULE_UNINDEXED);
    });
  }));
}

/**
 * `fn` on `items` in groups of `TICK_GROUPS` (one transaction each), `TICK_CONCURRENCY` groups at a
 * time (each group's records are entity groups of their own: the transactions never contend);
 * answers in the groups' order. A group that fails fails the call once those in flight ended: what
 * they committed stands (runs planned stay pending for the next tick).
 */
async function eachGroup<T, R>(items: readonly T[], fn: (group: readonly T[]) => Promise<R>): Promise<R[]> {
  const groups: T[][] = [];
  for (let g = 0; g < items.length; g += TICK_GROUPS) groups.push(items.slice(g, g + TICK_GROUPS));
  const out: R[] = new Array<R>(groups.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < groups.length && !failure) {
      const i = next++;
      try {
        out[i] = await fn(groups[i]!);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(TICK_CONCURRENCY, groups.length) }, worker));
  if (failure) throw failure.error;
  return out;
}

/** Plans one group of due schedules in one transaction (at most `TICK_GROUPS` records); the runs to start go into `starts`. */
async function planGroup(parts: TickParts, declarations: ReadonlyMap<string, Declaration>, group: readonly Key[], now: Date, liveByName: ReadonlyMap<string, { chain: string; live: boolean }>, starts: Start[]): Promise<Planned> {
  return parts.locks.transact(async (tx) => {
    starts.length = 0;
    const found = await getAll(tx, group);
    const out: Planned = { due: 0, skipped: 0, queued: 0, failed: 0, removed: [] };
    found.forEach((props, i) => {
      const record = readSchedule(props);
      if (!record) return;
      const d = declarations.get(record.name);
      if (!d) {
        if (record.state === 'removed') return;
        out.removed.push(record.name);
        tx.put(group[i]!, scheduleProperties(removed(record)), SCHEDULE_UNINDEXED);
        return;
      }
      out.due += 1;
      const seen = liveByName.get(record.name);
      // The last run read before the transaction is the one judged; if another was recorded since, judge it live.
      const live = seen === undefined ? record.last?.outcome === 'started' && record.last.chain !== undefined : seen.chain === record.last?.chain ? seen.live : true;
      const plan = planTick(record, d, now, live, (when) => placeOf(d, when));
      let next = plan.record;
      if (plan.failed.length > 0) {
        out.failed += plan.failed.length;
        next = failedBeforeStart(next, plan.failed, now);
      }
      out.skipped += plan.skipped;
      if (plan.queued) out.queued += 1;
      tx.put(group[i]!, scheduleProperties(next), SCHEDULE_UNINDEXED);
      for (const run of plan.starts) starts.push({ name: record.name, run, d });
    });
    return out;
  });
}

/** What planning a group did. */
interface Planned {
  due: number;
  skipped: number;
  queued: number;
  failed: number;
  removed: string[];
}

/** Starts the runs, one bulk kickoff per scheduled time; answers each schedule's outcomes. */
async function startRuns(parts: TickParts, starts: readonly Start[]): Promise<Map<string, RunOutcome[]>> {
  const byName = new Map<string, RunOutcome[]>();
  const add = (name: string, outcome: RunOutcome): void => void byName.set(name, [...(byName.get(name) ?? []), outcome]);
  const byTime = new Map<number, Start[]>();
  for (const s of starts) byTime.set(s.run.at.getTime(), [...(byTime.get(s.run.at.getTime()) ?? []), s]);
  for (const [time, group] of [...byTime].sort(([a], [b]) => a - b)) {
    const at = new Date(time);
    const kickoffId = tickKickoffId(at);
    const items: KickoffItem[] = [];
    const itemStarts: Start[] = [];
    const keysTaken = new Map<string, string>();
    for (const s of group) {
      const tickOf = { name: s.name, at };
      try {
        const key = parseKeyPath(s.run.key, s.run.namespace);
        // The bulk kickoff takes each entity once a call: a second schedule on the same entity at the same tick is refused.
        const identity = keyIdentity(key);
        const holder = keysTaken.get(identity);
        if (holder !== undefined) throw new TypeError(`schedule ${JSON.stringify(holder)} runs on the same entity (${s.run.key}) at the same tick`);
        keysTaken.set(identity, s.name);
        const scheduleTime = new Date(time + jitterOf(s.name, at, s.d.spec.jitterMs));
        items.push({ key, entity: s.d.entityOf(tickOf), path: s.d.spec.path, payload: s.d.payloadOf(tickOf), ...(scheduleTime.getTime() > parts.clock() && { scheduleTime }) });
        itemStarts.push(s);
      } catch (error) {
        parts.logger.error('a schedule\'s run could not be built: its entity or payload function threw', { schedule: s.name, at: at.toISOString(), error: String(error) });
        add(s.name, { run: s.run, outcome: 'failed', error: String(error).slice(0, 500), retry: false });
      }
    }
    if (items.length === 0) continue;
    let answer: ScheduleManyResult;
    try {
      answer = await parts.kickoff(items, { kickoffId });
    } catch (error) {
      // Nothing was started or the store could not be reached: the runs stay pending (the same
      // kickoff id finds what was started). Any other error would repeat: the runs are dropped.
      const retry = error instanceof StoreUnavailableError || error instanceof ContentionError;
      parts.logger.error(retry ? 'a tick could not start its runs: they stay pending for the next tick' : 'a tick\'s runs were refused', { kickoffId, runs: items.length, error: String(error) });
      for (const s of itemStarts) add(s.name, { run: s.run, outcome: 'failed', error: String(error).slice(0, 500), retry });
      continue;
    }
    answer.results.forEach((r, i) => {
      const s = itemStarts[i]!;
      if (r.status === 'started') add(s.name, { run: s.run, outcome: 'started', chain: kickoffChainId(kickoffId, keyIdentity(r.key)), retry: false });
      else if (r.status === 'busy') add(s.name, { run: s.run, outcome: 'busy', retry: false });
      else {
        const retry = r.error instanceof StoreUnavailableError;
        parts.logger.error('a schedule\'s run was not started', { schedule: s.name, at: at.toISOString(), error: r.error.message, retried: retry });
        add(s.name, { run: s.run, outcome: 'failed', error: r.error.message.slice(0, 500), retry });
      }
    });
  }
  return byName;
}

/** Where a tick's run goes, or the error its key function threw. */
function placeOf(d: Declaration, at: Date): { key: string; namespace: string } | Error {
  try {
    const key = d.keyOf({ name: d.name, at });
    return { key: keyPath(key), namespace: key.namespace ?? '' };
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

function safeKey(text: string, namespace: string): Key | undefined {
  try {
    return parseKeyPath(text, namespace);
  } catch {
    return undefined;
  }
}

/** The same delay for a schedule's tick every time it is asked: a hash of the two, below `jitterMs`. */
export function jitterOf(name: string, at: Date, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  let h = 2166136261;
  for (const c of `${name}\n${at.toISOString()}`) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0;
  return h % (jitterMs + 1);
}
