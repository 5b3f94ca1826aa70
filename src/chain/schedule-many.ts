/**
 * `locker.scheduleMany()`: many kickoffs at once (docs/design.md, section 5, "Many kickoffs at once").
 *
 * 1. Every item is checked before anything is written: a key given twice throws a `TypeError`;
 *    an invalid item is reported `failed` and skipped.
 * 2. Batches of {@link BATCH} items, {@link PARALLEL_BATCHES} at a time: one `readMany`, the
 *    `kickoff` transition per entity (`kickoff-plan.ts`), one `replaceMany` that keeps each
 *    entity's compare-and-swap. An entity that changed meanwhile is read and decided again (up to
 *    {@link ROUNDS} times); one the store refuses fails alone.
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
import { ConfigError, StoreUnavailableError } from '../errors/errors';
import { checkDeliverable, keyPath } from '../keys/key-codec';
import { planKickoff, kickoffChainId, kickoffRecord, kickoffRecordKey, type Carry, type KickoffPlan } from '../rules/kickoff-plan';
import { endStepAlerts, NO_ALERTS } from '../rules/alert-markers';
import { describeError } from '../rules/lock-fields';
import { rejectUnknownOptions } from '../config/option-names';
import { CHAIN_SETTINGS, checkStep } from './next-step';
import type { NextStep } from '../rules/ledger-record';
import type { BatchLockWrite } from '../locks/locks';
import {
  SCHEDULE_MANY_DEFAULTS, SCHEDULE_MANY_OPTION_NAMES,
  type KickoffItem, type KickoffProgress, type KickoffResult, type ScheduleManyOptions, type ScheduleManyResult,
} from './schedule-many-types';
import { keyString } from '../keys/keys';
import { StepState, type ConditionalWrite, type LedgerRecord, type Properties, type VersionedRead } from '../types';

/** What a bulk kickoff reads of the configuration: the chain settings, the logger, the key's app id. */
export const KICKOFF_SETTINGS = [...CHAIN_SETTINGS, 'logger', 'keyAppId'] as const satisfies readonly SettingName[];
export type KickoffSettings = Settings<typeof KICKOFF_SETTINGS>;

/** The parts a bulk kickoff uses, with its settings. */
type KickoffParts = Pick<Parts, 'locks' | 'emit' | 'dispatcher' | 'ledger'> & { readonly config: KickoffSettings };

/**
 * Items per batch: one lookup (the entities and their kickoff records) and three commits of 125 mutations (Datastore takes 1,000 keys and 500
 * mutations). Smaller batches, several in flight, keep the backend busier than a few large ones
 * (measured on the legacy emulator: `npm run bench:kickoff`).
 */
export const BATCH = 125;
/** Batches in flight at once. */
export const PARALLEL_BATCHES = 8;
/** Reads and decisions of an entity that keeps changing under the call, before it is reported failed. */
const ROUNDS = 5;

/** An item that passed the checks. */
interface Pending {
  index: number;
  item: KickoffItem;
  step: NextStep;
  chain: string;
  /** Set once a write of this item's record may have been stored (a conflict may leave it behind). */
  recorded?: LedgerRecord;
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
export async function scheduleMany(parts: KickoffParts, items: readonly KickoffItem[], options: ScheduleManyOptions = {}): Promise<ScheduleManyResult> {
  if (!parts.dispatcher.hasQueue) throw new ConfigError('scheduleMany() needs a queue: pass `queue` to the Locker.');
  rejectUnknownOptions('scheduleMany()', options, SCHEDULE_MANY_OPTION_NAMES);
  if (!Array.isArray(items)) throw new TypeError('scheduleMany(items): items must be an array of { key, entity, path, payload?, scheduleTime? }');
  const kickoffId = options.kickoffId ?? randomUUID();
  if (typeof kickoffId !== 'string' || kickoffId === '') throw new TypeError('scheduleMany(): kickoffId must be a non-empty string');
  const concurrency = options.concurrency ?? SCHEDULE_MANY_DEFAULTS.concurrency;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) throw new RangeError(`scheduleMany(): concurrency must be a whole number of at least 1; got ${String(concurrency)}`);

  const run = new Run(parts, items, kickoffId, options.onProgress);
  const pending = check(parts, items, kickoffId, run);
  const batches: Pending[][] = [];
  for (let start = 0; start < pending.length; start += BATCH) batches.push(pending.slice(start, start + BATCH));
  const sending = new Limiter(concurrency); // across batches: at most `concurrency` tasks are created at once
  await eachLimited(batches, PARALLEL_BATCHES, async (batch) => {
    const toSend = await write(parts, batch, run);
    await Promise.all(toSend.map((s) => sending.run(() => send(parts, s, run))));
  });
  return run.result();
}

/** Checks every item; throws on a key given twice, reports the other invalid items failed. */
function check(parts: KickoffParts, items: readonly KickoffItem[], kickoffId: string, run: Run): Pending[] {
  const first = new Map<string, number>();
  const ids = items.map((item, index) => {
    let id: string;
    try {
      if (typeof item !== 'object' || item === null) throw new TypeError('an item must be { key, entity, path, payload?, scheduleTime? }');
      id = keyString(item.key);
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
      checkDeliverable(item.key, parts.config.keyAppId);
      if (item.scheduleTime !== undefined && !(item.scheduleTime instanceof Date)) throw new TypeError('scheduleTime must be a Date');
      const step = checkStep(parts, item.path, item.payload, item.scheduleTime ? { at: item.scheduleTime } : {});
      pending.push({ index, item, step, chain: kickoffChainId(kickoffId, id) });
    } catch (error) {
      run.settle(index, { status: 'failed', key: item?.key, error: asError(error) });
    }
  });
  return pending;
}

/** Reads, decides and writes one batch (again for the entities that changed meanwhile); returns the steps to send. */
async function write(parts: KickoffParts, batch: Pending[], run: Run): Promise<ToSend[]> {
  if (!parts.locks.batches) return eachTransaction(parts, batch, run);
  const toSend: ToSend[] = [];
  let open = batch;
  for (let round = 0; round < ROUNDS && open.length > 0; round++) {
    let reads: VersionedRead[];
    let records: VersionedRead[];
    try {
      // Each entity with the kickoff's record of its chain, in one lookup (2 × 125 keys).
      const all = await parts.locks.readMany([...open.map((p) => p.item.key), ...open.map((p) => kickoffRecordKey(p.item.key, p.chain))]);
      reads = all.slice(0, open.length);
      records = all.slice(open.length);
    } catch (error) {
      for (const p of open) fail(parts, run, p, error);
      return toSend;
    }
    const now = new Date(parts.config.clock());
    const writes: BatchLockWrite[] = [];
    const writing: { pending: Pending; previousTask: string | undefined; record: LedgerRecord }[] = [];
    open.forEach((p, i) => {
      const read = reads[i]!;
      const plan = decide(parts, run, p, read, records[i]!.properties, now, toSend);
      if (plan?.kind !== 'start') return;
      writes.push({ read, lock: plan.lock, own: plan.own, record: plan.record, marker: markerOf(p, plan.record, now) });
      writing.push({ pending: p, previousTask: plan.previousTask, record: plan.record });
      p.recorded = plan.record;
    });
    const outcomes = writes.length === 0 ? [] : await parts.locks.replaceMany(writes).catch((error: unknown) => writes.map(() => ({ outcome: 'error' as const, error: asError(error) })));
    const next: Pending[] = [];
    outcomes.forEach((outcome, i) => {
      const { pending, previousTask, record } = writing[i]!;
      if (outcome.outcome === 'conflict') next.push(pending);
      else if (outcome.outcome === 'error') fail(parts, run, pending, outcome.error);
      else {
        started(parts, pending, record, previousTask);
        toSend.push({ pending, record, seq: record.seq });
      }
    });
    run.progress();
    open = next;
  }
  for (const p of open) fail(parts, run, p, new StoreUnavailableError(`the entity changed under the kickoff ${ROUNDS} times in a row; not started`));
  return toSend;
}

/** The plan for one read entity; settles the busy ones and queues the resumed ones. */
function decide(parts: KickoffParts, run: Run, p: Pending, read: VersionedRead, recorded: Properties | undefined, now: Date, toSend: ToSend[]): KickoffPlan | undefined {
  let plan: KickoffPlan;
  try {
    plan = planKickoff(p.item.key, read.properties, p.item.entity, p.chain, p.step, now, carry(parts, now), recorded);
  } catch (error) {
    fail(parts, run, p, error);
    return undefined;
  }
  if (plan.kind === 'busy') forgetRecord(parts, p);
  settleKnown(run, p, plan, toSend);
  return plan;
}

/** A store without the batch operations: each item in a transaction of its own, as `schedule()` runs it. */
async function eachTransaction(parts: KickoffParts, batch: Pending[], run: Run): Promise<ToSend[]> {
  const toSend: ToSend[] = [];
  await eachLimited(batch, 2, async (p) => { // 2 per batch, 16 in all: as many transactions as a loop of schedule() at concurrency 16
    try {
      const now = new Date(parts.config.clock());
      const done = await parts.locks.transaction(p.item.key, async (tx) => {
        const props = await tx.get(p.item.key);
        const markerKey = kickoffRecordKey(p.item.key, p.chain);
        const plan = planKickoff(p.item.key, props, p.item.entity, p.chain, p.step, now, carry(parts, now), await tx.get(markerKey));
        if (plan.kind === 'start') {
          parts.locks.put(tx, p.item.key, props ?? {}, plan.lock, plan.own);
          const marker = markerOf(p, plan.record, now);
          tx.put(marker.key, marker.properties, marker.excludeFromIndexes);
          if (plan.previousTask !== undefined) tx.deleteLedger(p.item.key, plan.previousTask);
          tx.putLedger(plan.record);
        }
        return plan;
      });
      if (done.kind === 'start') {
        started(parts, p, done.record, undefined);
        toSend.push({ pending: p, record: done.record, seq: done.record.seq });
      } else settleKnown(run, p, done, toSend);
    } catch (error) {
      fail(parts, run, p, error);
    }
  });
  run.progress();
  return toSend;
}

/** The kickoff's record of the chain it starts on `p`'s entity (`kickoff-plan.ts`). */
function markerOf(p: Pending, record: LedgerRecord, now: Date): NonNullable<ConditionalWrite['marker']> {
  return { key: kickoffRecordKey(p.item.key, p.chain), ...kickoffRecord(record.seq, now) };
}

/** A kickoff keeps the alerts still owed on the lock it starts from, as `schedule()` does (`endStepAlerts`). */
function carry(parts: KickoffParts, now: Date): Carry {
  return (planned, from) => endStepAlerts(parts.config, planned, from, NO_ALERTS, now);
}

/** Settles a plan found in a transaction (busy, or this kickoff's own chain). */
function settleKnown(run: Run, p: Pending, plan: KickoffPlan, toSend: ToSend[]): void {
  if (plan.kind === 'busy') run.settle(p.index, { status: 'busy', key: p.item.key, seq: plan.seq, running: plan.running });
  else if (plan.kind === 'own') {
    const { lock } = plan;
    // The chain it started ended (and another may run, or the entity was deleted): nothing is started or sent.
    if (!plan.live) return run.settle(p.index, { status: 'started', key: p.item.key, seq: plan.seq, task: '', sent: false, resumed: true });
    const live = lock.state === StepState.scheduled && lock.req === '' && lock.task !== undefined;
    if (live) toSend.push({ pending: p, record: undefined, seq: lock.seq, resumedTask: lock.task });
    else run.settle(p.index, { status: 'started', key: p.item.key, seq: lock.seq, task: lock.task ?? '', sent: false, resumed: true });
  }
}

/** Creates a written step's task; for a resumed chain, reads its record first and sends its current task. */
async function send(parts: KickoffParts, s: ToSend, run: Run): Promise<void> {
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

function started(parts: KickoffParts, p: Pending, record: LedgerRecord, previousTask: string | undefined): void {
  parts.emit('scheduled', { key: p.item.key, seq: record.seq, attempt: '', task: record.task, path: record.path });
  parts.ledger.retire(p.item.key, previousTask);
}

/**
 * Reports an item failed. A record its write may have stored stays: after a failed commit its entity
 * may have been written nonetheless, and the sweep clears the record if it was not.
 */
function fail(parts: KickoffParts, run: Run, p: Pending, error: unknown): void {
  run.settle(p.index, { status: 'failed', key: p.item.key, error: asError(error) });
  parts.config.logger.warn('scheduleMany(): a chain was not started', { key: keyPath(p.item.key), error: asError(error).message });
}

/** Removes a record an earlier write of this item may have left (its entity was not written): the sweep would otherwise. */
function forgetRecord(parts: KickoffParts, p: Pending): void {
  if (p.recorded) parts.ledger.retire(p.item.key, p.recorded.id);
  p.recorded = undefined;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** Runs `fn` on every item, at most `limit` at a time. */
async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
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

/** The results of one call, and its progress. */
class Run {
  private readonly results: (KickoffResult | undefined)[];
  private readonly counts = { started: 0, busy: 0, failed: 0 };
  private readonly total: number;
  private sinceProgress = 0;

  constructor(
    private readonly parts: KickoffParts,
    private readonly items: readonly KickoffItem[],
    private readonly kickoffId: string,
    private readonly onProgress: ((progress: KickoffProgress) => void) | undefined,
  ) {
    this.total = items.length;
    this.results = new Array<KickoffResult | undefined>(this.total);
  }

  settled(index: number): boolean {
    return this.results[index] !== undefined;
  }

  settle(index: number, result: KickoffResult): void {
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

  result(): ScheduleManyResult {
    this.progress();
    // Every item is settled by then; the fallback only keeps the answer whole if a path were missed.
    const results = this.results.map((r, i): KickoffResult => r ?? { status: 'failed', key: this.items[i]!.key, error: new Error(`item ${i} was not settled`) });
    return { kickoffId: this.kickoffId, results, ...this.counts };
  }
}
