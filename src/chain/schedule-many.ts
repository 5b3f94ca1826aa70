/**
 * `locker.scheduleMany()`: many kickoffs at once (docs/design.md, section 5, "Many kickoffs at once").
 *
 * 1. Every item is checked before anything is written: a key given twice throws a `TypeError`;
 *    an invalid item is reported `failed` and skipped. The kickoff's record (`LockerKickoffRun`,
 *    `kickoff-run.ts`) is written `running`, with the total and the items' kinds and namespaces;
 *    when the call returns, it says `finished` and how the items settled.
 * 2. Batches of {@link BATCH} items, {@link PARALLEL_BATCHES} at a time, through the batch kickoff's
 *    rounds (`kickoff-rounds.ts`, which `ctx.fanOut()` runs too): one `readMany` of the entities
 *    and their kickoff records, the `kickoff` transition per entity (`kickoff-plan.ts`), one
 *    `replaceMany` that keeps each entity's compare-and-swap, each kickoff record in its entity's
 *    commit. An entity that changed meanwhile is read and decided again; one the store refuses
 *    fails alone. Every chain started carries the kickoff's `lock_run` (`kickoffRun`, `rules/kickoff-plan.ts`).
 * 3. The written steps' tasks are created with bounded concurrency.
 *
 * The ledger makes a crash anywhere harmless: a step written without its task is delivered by the
 * sweep, and a call made again with the same `kickoffId` recognises the chains it started (it
 * sends their tasks again, under the same names) and starts the rest.
 *
 * A store without `readMany`/`replaceMany` gets one transaction per item, as `schedule()` does.
 */
import type { SettingName, Settings } from '../config/settings';
import { randomUUID } from 'node:crypto';
import type { Parts } from '../parts';
import { ConfigError } from '../errors/errors';
import { checkDeliverable, keyPath } from '../keys/key-codec';
import { kickoffChainId, kickoffRecord, kickoffRecordKey, kickoffRun } from '../rules/kickoff-plan';
import { eachLimited, kickoffRounds, type KickoffJob, type KickoffMarking, type KickoffOutcome } from './kickoff-rounds';
import { describeError } from '../rules/lock-fields';
import { rejectUnknownOptions } from '../config/option-names';
import { CHAIN_SETTINGS, checkStep } from './next-step';
import type { NextStep } from '../rules/ledger-record';
import {
  SCHEDULE_MANY_DEFAULTS, SCHEDULE_MANY_OPTION_NAMES,
  type KickoffItem, type KickoffProgress, type KickoffResult, type ScheduleManyOptions, type ScheduleManyResult,
} from './schedule-many-types';
import { keyString } from '../keys/keys';
import type { KeyType } from '../keys/key-type';
import type { Key } from '@google-cloud/datastore';
import { StepState, type LedgerRecord } from '../types';
import { begin, end, kickoffRunKey, kickoffRunProperties, kindsOf, KICKOFF_RUN_UNINDEXED, readKickoffRun, type KickoffRun } from './kickoff-run';

/** What a bulk kickoff reads of the configuration: the chain settings, the logger, the key's app id. */
export const KICKOFF_SETTINGS = [...CHAIN_SETTINGS, 'logger', 'keyAppId'] as const satisfies readonly SettingName[];
export type KickoffSettings = Settings<typeof KICKOFF_SETTINGS>;

/** The parts a bulk kickoff uses, with its settings. */
type KickoffParts = Pick<Parts, 'locks' | 'emit' | 'dispatcher' | 'ledger'> & { readonly config: KickoffSettings };

/**
 * Items per batch: one lookup (the entities and their kickoff records), two commits (125 ledger records; the 125 entities with
 * their kickoff records) and one lookup of the records again (Datastore takes 1,000 keys and 500 mutations). Smaller batches, several in flight, keep the backend busier than a few large ones
 * (measured on the legacy emulator: `npm run bench:kickoff`).
 */
export const BATCH = 125;
/** Batches in flight at once. */
export const PARALLEL_BATCHES = 8;

/** An item that passed the checks. */
interface Pending {
  index: number;
  item: KickoffItem;
  step: NextStep;
  chain: string;
}

/** A step this call wrote, or an earlier run of the same kickoff wrote, whose task is to be sent. */
interface ToSend {
  pending: Pending;
  record: LedgerRecord | undefined;
  /** For a resumed chain: the task its lock names, to read its record by. */
  resumedTask?: string;
  seq: number;
}

/** Starts a chain on every item's entity; see the file's comment. */
export async function scheduleMany<K>(parts: KickoffParts, items: readonly KickoffItem<K>[], options: ScheduleManyOptions = {}, keys: KeyType<K>): Promise<ScheduleManyResult<K>> {
  if (!parts.dispatcher.hasQueue) throw new ConfigError('scheduleMany() needs a queue: pass `queue` to the Locker.');
  rejectUnknownOptions('scheduleMany()', options, SCHEDULE_MANY_OPTION_NAMES);
  if (!Array.isArray(items)) throw new TypeError('scheduleMany(items): items must be an array of { key, entity, path, payload?, scheduleTime? }');
  const kickoffId = options.kickoffId ?? randomUUID();
  if (typeof kickoffId !== 'string' || kickoffId === '') throw new TypeError('scheduleMany(): kickoffId must be a non-empty string');
  const concurrency = options.concurrency ?? SCHEDULE_MANY_DEFAULTS.concurrency;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) throw new RangeError(`scheduleMany(): concurrency must be a whole number of at least 1; got ${String(concurrency)}`);

  const run = new Run<K>(parts, items, kickoffId, options.onProgress);
  const pending = check(parts, items, kickoffId, run, keys);
  await record(parts, (found) => begin(found, {
    kickoffId, run: run.run, total: items.length, kinds: kindsOf(pending.map((p) => p.item.key)), now: new Date(parts.config.clock()),
  }), run.run);
  const batches: Pending[][] = [];
  for (let start = 0; start < pending.length; start += BATCH) batches.push(pending.slice(start, start + BATCH));
  const sending = new Limiter(concurrency); // across batches: at most `concurrency` tasks are created at once
  await eachLimited(batches, PARALLEL_BATCHES, async (batch) => {
    const toSend = await write(parts, batch, run);
    await Promise.all(toSend.map((s) => sending.run(() => send(parts, s, run))));
  });
  const result = run.result();
  await record(parts, (found) => found && end(found, result, new Date(parts.config.clock())), run.run);
  return result;
}

/**
 * Writes the kickoff's record (`kickoff-run.ts`) as `change` makes it from the one stored: one
 * small transaction when the call begins and one when it ends, never one per item. A store fault
 * here is logged and the kickoff goes on: its chains matter more than its record.
 */
async function record(parts: KickoffParts, change: (found: KickoffRun | undefined) => KickoffRun | undefined, runId: string): Promise<void> {
  const key = kickoffRunKey(runId);
  try {
    await parts.locks.transact(async (tx) => {
      const next = change(readKickoffRun(await tx.get(key)));
      if (next) tx.put(key, kickoffRunProperties(next), KICKOFF_RUN_UNINDEXED);
    });
  } catch (error) {
    parts.config.logger.warn('scheduleMany(): the kickoff\'s record was not written; its chains are not affected', { run: runId, error: describeError(error) });
  }
}

/**
 * Checks every item, its key turned into a `Key` by the store's key type; throws on a key given
 * twice, reports the other invalid items failed (a key the key type refuses among them).
 */
function check<K>(parts: KickoffParts, items: readonly KickoffItem<K>[], kickoffId: string, run: Run<K>, keys: KeyType<K>): Pending[] {
  const first = new Map<string, number>();
  const converted: Key[] = [];
  const ids = items.map((item, index) => {
    let id: string;
    try {
      if (typeof item !== 'object' || item === null) throw new TypeError('an item must be { key, entity, path, payload?, scheduleTime? }');
      const key = keys.toKey(item.key);
      id = keyString(key);
      converted[index] = key;
    } catch (error) {
      return asError(error);
    }
    const earlier = first.get(id);
    if (earlier !== undefined) {
      throw new TypeError(`scheduleMany(): items ${earlier} and ${index} have the same key; each entity may be kicked off once per call. Nothing was written.`);
    }
    first.set(id, index);
    return id;
  });
  const pending: Pending[] = [];
  items.forEach((item, index) => {
    const id = ids[index]!;
    try {
      if (id instanceof Error) throw id;
      const key = converted[index]!;
      checkDeliverable(key, parts.config.keyAppId);
      if (item.scheduleTime !== undefined && !(item.scheduleTime instanceof Date)) throw new TypeError('scheduleTime must be a Date');
      const step = checkStep(parts, item.path, item.payload, item.scheduleTime ? { at: item.scheduleTime } : {});
      pending.push({ index, item: { ...item, key }, step, chain: kickoffChainId(kickoffId, id) });
    } catch (error) {
      run.settle(index, { status: 'failed', key: item?.key, error: asError(error) });
    }
  });
  return pending;
}

/** The jobs of one batch, each with the pending item it carries out. */
interface Job extends KickoffJob {
  pending: Pending;
}

/** A bulk kickoff's marker: its `LockerKickoff` record of the chain (`kickoff-plan.ts`). */
const MARKING: KickoffMarking<Job> = {
  recorded: (_job, marker, mine) => (marker === undefined || mine ? undefined : { seq: typeof marker.seq === 'number' ? marker.seq : 0 }),
  mark: (_job, _marker, record, now) => kickoffRecord(record.seq, now),
  unmark: async (tx, job) => { tx.delete(job.markerKey); },
};

/** Starts one batch's chains (`kickoff-rounds.ts`); settles what it can and returns the steps to send. */
async function write(parts: KickoffParts, batch: Pending[], run: Run<unknown>): Promise<ToSend[]> {
  const toSend: ToSend[] = [];
  const jobs: Job[] = batch.map((pending) => ({
    pending, key: pending.item.key, entity: pending.item.entity, chain: pending.chain, step: pending.step, markerKey: kickoffRecordKey(pending.item.key, pending.chain), run: kickoffRun(run.kickoffId),
  }));
  await kickoffRounds(parts, jobs, MARKING, ({ pending: p }, outcome) => {
    if (outcome.kind === 'started') toSend.push({ pending: p, record: outcome.record, seq: outcome.record.seq });
    else if (outcome.kind === 'busy') run.settle(p.index, { status: 'busy', key: p.item.key, seq: outcome.seq, running: outcome.running });
    else if (outcome.kind === 'failed') fail(parts, run, p, outcome.error);
    else settleOwn(run, p, outcome, toSend);
  }, () => run.progress());
  return toSend;
}

/** Settles (or queues for sending) a chain this kickoff started before. */
function settleOwn(run: Run<unknown>, p: Pending, plan: Extract<KickoffOutcome, { kind: 'own' }>, toSend: ToSend[]): void {
  const { lock } = plan;
  // The chain it started ended (and another may run, or the entity was deleted): nothing is started or sent.
  if (!plan.live) return run.settle(p.index, { status: 'started', key: p.item.key, seq: plan.seq, task: '', sent: false, resumed: true });
  const live = lock.state === StepState.scheduled && lock.req === '' && lock.task !== undefined;
  if (live) toSend.push({ pending: p, record: undefined, seq: lock.seq, resumedTask: lock.task });
  else run.settle(p.index, { status: 'started', key: p.item.key, seq: lock.seq, task: lock.task ?? '', sent: false, resumed: true });
}

/** Creates a written step's task; for a resumed chain, reads its record first and sends its current task. */
async function send(parts: KickoffParts, s: ToSend, run: Run<unknown>): Promise<void> {
  const { pending } = s;
  if (run.settled(pending.index)) return;
  let record = s.record;
  if (!record && s.resumedTask !== undefined) {
    const id = s.resumedTask;
    record = await parts.locks.transact((tx) => tx.getLedger(pending.item.key, id)).catch(() => undefined);
    if (record && record.seq !== s.seq) record = undefined;
  }
  const sent = record ? await parts.dispatcher.send(record) : false;
  run.settle(pending.index, {
    status: 'started', key: pending.item.key, seq: s.seq, task: record?.task ?? s.resumedTask ?? '', sent, resumed: s.record === undefined,
  });
  run.progressEvery(100);
}

/**
 * Reports an item failed. A record its write may have stored stays: after a failed commit its entity
 * may have been written nonetheless, and the sweep clears the record if it was not.
 */
function fail(parts: KickoffParts, run: Run<unknown>, p: Pending, error: unknown): void {
  run.settle(p.index, { status: 'failed', key: p.item.key, error: asError(error) });
  parts.config.logger.warn('scheduleMany(): a chain was not started', { key: keyPath(p.item.key), error: asError(error).message });
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** Runs functions, at most `limit` at a time. */
class Limiter {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    while (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await fn();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}

/** The results of one call, and its progress; each result answers the item's own key (`K`). */
class Run<K = Key> {
  /** The `lock_run` of the chains this kickoff starts. */
  readonly run: string;
  private readonly results: (KickoffResult<unknown> | undefined)[];
  private readonly counts = { started: 0, busy: 0, failed: 0 };
  private readonly total: number;
  private sinceProgress = 0;

  constructor(
    private readonly parts: KickoffParts,
    private readonly items: readonly KickoffItem<K>[],
    readonly kickoffId: string,
    private readonly onProgress: ((progress: KickoffProgress) => void) | undefined,
  ) {
    this.total = items.length;
    this.run = kickoffRun(kickoffId);
    this.results = new Array<KickoffResult<unknown> | undefined>(this.total);
  }

  settled(index: number): boolean {
    return this.results[index] !== undefined;
  }

  settle(index: number, result: KickoffResult<unknown>): void {
    if (this.results[index] !== undefined) return;
    this.results[index] = result;
    this.counts[result.status]++;
    this.sinceProgress++;
  }

  /** Tells the listener, if anything settled since it was last told. */
  progress(): void {
    if (this.sinceProgress === 0 || !this.onProgress) return;
    this.sinceProgress = 0;
    const { started, busy, failed } = this.counts;
    try {
      this.onProgress({ total: this.total, done: started + busy + failed, started, busy, failed });
    } catch (error) {
      this.parts.config.logger.warn('scheduleMany(): the onProgress listener threw; ignored', { error: describeError(error) });
    }
  }

  /** Tells the listener once `every` items settled since it was last told, and at the end. */
  progressEvery(every: number): void {
    const { started, busy, failed } = this.counts;
    if (this.sinceProgress >= every || started + busy + failed === this.total) this.progress();
  }

  result(): ScheduleManyResult<K> {
    this.progress();
    // Every item is settled by then; the fallback only keeps the answer whole if a path were missed.
    // Each result answers the item's own key, as the caller gave it (a DocumentReference on FirestoreStore).
    const results = this.results.map((r, i): KickoffResult<K> => ({ ...(r ?? { status: 'failed', error: new Error(`item ${i} was not settled`) }), key: this.items[i]?.key as K }));
    return { kickoffId: this.kickoffId, results, ...this.counts };
  }
}
