/**
 * `locker.inspect()`: steps listed by state, kind and namespace, oldest or newest first, a page at
 * a time; and one entity's detail. Every list is one indexed query range on (`lock_state`,
 * `lock_ts`) per page, read in a few bounded batches: never a scan of a kind.
 */
import type { SettingName, Settings } from '../../config/settings';
import { redactProperties, scrub, secretsOf, type Redaction } from '../../alert/redact';
import { viewFanOut, type FanOutView } from '../../fanout/view';
import type { Key } from '@google-cloud/datastore';
import type { Parts } from '../../parts';
import type { Config } from '../../config/options';
import { ConfigError } from '../../errors/errors';
import { keyIdentity } from '../../keys/key-path';
import { DATASTORE_KEYS, isDatastoreKeys, type KeyType } from '../../keys/key-type';
import { fanOutRowWith, fanOutViewWith, kickoffRowWith, withKey, type FromKey } from './view-keys';
import { readLock, userProperties } from '../../rules/lock-fields';
import { HISTORY_STEPS, readHistory, storedHistory, type HistoryEntry } from '../../rules/step-history';
import { bucketsOf, endedSteps, minuteOf, MINUTE_MS, overall, type EndedStep, type Throughput } from './throughput';
import { MAX_QUERY_LIMIT } from '../../store/lock-query';
import type { LockQuery } from '../../store/lock-query';
import { StepState, type LockCount, type Properties, type QueueDepth } from '../../types';
import type { StoreReads } from '../../store/reads';
import { viewLedger, type LedgerView } from './ledger-view';
import { getOperation, listOperations, type OperationView } from '../bulk/view';
import { searchEntities, type SearchReading, type SearchScope } from './search';
import { decodeKey } from '../../keys/key-codec';
import { fanOutRowOf, fanOutRows, fanOutsOfChain, kickoffRowOf, kickoffRows, type EntityRef, type FanOutRow, type KickoffRow, type RowPage, type RowParts } from './runs';
import { fanOutOfRun } from '../../rules/kickoff-plan';
import { getHeader } from '../../fanout/read-children';
import { kickoffRun } from '../../rules/kickoff-plan';
import { listSchedules, viewOf, type SchedulePage } from '../../recurring/operator';
import { readSchedule, scheduleKey } from '../../recurring/schedule-record';
import type { ScheduleView } from '../../recurring/recurring-types';
import { InspectState, INSPECT_STATES, inList, splitError, viewStep, withLedger, type StepSummary, type ViewClock } from './step-view';

/** The states whose steps wait for a task: their ledger records tell queued from stalled. */
const WAITING: ReadonlySet<InspectState> = new Set([InspectState.scheduled, InspectState.stalled, InspectState.stale, InspectState.running]);

/** What to list. */
export interface ListQuery {
  /** Which steps. */
  state: InspectState;
  /** Their entities' kind. */
  kind: string;
  /** Their namespace; the default one when left out. */
  namespace?: string;
  /** By last progress (`lock_ts`). Defaults to `oldest` first. */
  order?: 'oldest' | 'newest';
  /** At most this many steps, 1 to 200. Defaults to 50. */
  limit?: number;
  /** Where the previous page ended (its `cursor`). */
  cursor?: string;
  /**
   * Only the chains of one kickoff or fan-out: its `run` (`k:<kickoff id>`, `f:<fan-out id>`, as
   * `kickoffs()`/`fanOuts()` give it), e.g. a fan-out's failed children.
   */
  run?: string;
}

/** A page of steps. */
export interface StepPage<K = Key> {
  /** The steps of this page, in the order asked for. */
  steps: StepSummary<K>[];
  /** Pass it back as `cursor` for the next page; undefined when there is no more. */
  cursor?: string;
}

/** One entity's detail. */
export interface StepDetail<K = Key> extends StepSummary<K> {
  /** The last error of the current step, message and stack as stored (bounded). */
  error?: {
    /** The error's message. */
    message: string;
    /** Its stack, when one was stored. */
    stack?: string;
  };
  /** Alerts sent for this entity, as `reason:seq`. */
  alerts: string[];
  /**
   * The ledger record of the current step (the one the entity's `lock_task` names, for its
   * `lock_seq`): undefined when there is none, as for a complete or cancelled chain, a step the Go
   * library scheduled, or a record the sweep already cleared.
   */
  ledger?: LedgerView;
  /**
   * When the current step was scheduled: its ledger record's `createdAt`, the commit of the step
   * that scheduled it (or of the kickoff). Not when an attempt first ran it, which is not stored;
   * a retry or re-send keeps it. Undefined without a ledger record.
   */
  startedAt?: Date;
  /** How long ago `startedAt` was, ms. */
  startedAgeMs?: number;
  /** The longest an attempt may fail before the step fails for good. */
  maxRetries: number;
  /** The lease duration the states were computed with, ms. */
  leaseDurationMs: number;
  /** How long without progress makes a scheduled step stalled, ms. */
  stallAfterMs: number;
  /** The fan-out the chain waits for (its step `lock_seq - 1` fanned out), or that it joined: counts, oldest pending child, sample failures. */
  fanOut?: FanOutView<K>;
  /**
   * The chain's last steps, newest first, as the lock keeps them (`lock_hist`: at most
   * `HISTORY_STEPS`): route, when the last attempt began, how long it took, attempts, outcome,
   * takeover. Empty for an entity written before the field existed or by the Go library.
   */
  history: HistoryEntry[];
  /** Every fan-out of the current chain (at most 20, newest first), joined ones included, as rows with their progress. */
  fanOuts: FanOutRow<K>[];
  /** For a fan-out's child: the fan-out (its `lock_run` names it) and its parent, read from its header. */
  parent?: ChildOf<K>;
}

/** A fan-out child's fan-out and parent (`StepDetail.parent`). */
export interface ChildOf<K = Key> extends EntityRef<K> {
  /** The fan-out's id. */
  fanOut: string;
}

/** The largest count the overview asks for, by default: past it a count reads "10,000+". */
export const DEFAULT_COUNT_CAP = 10_000;

/** One kind's numbers in one namespace (`inspector.counts()`). */
export interface KindCounts {
  /** The kind counted. */
  kind: string;
  /** The namespace counted (`''`: the default one). */
  namespace: string;
  /** Steps failed for good. */
  failed: LockCount;
  /** Steps scheduled: waiting for their task, or running. */
  live: LockCount;
  /** Of the live ones, those with no progress for `stallAfter`: stalled, or queued behind a backlog. */
  waitingLong: LockCount;
  /** Chains finished. */
  complete: LockCount;
  /** Chains an operator cancelled. */
  cancelled: LockCount;
}

/** Entities that owe an alert (`inspector.alertsOwed()`). */
export interface AlertsOwed<K = Key> {
  /** The entities, one summary each. */
  steps: StepSummary<K>[];
  /** True when more records were due than were read: more entities may owe one. */
  cut: boolean;
}

/** A kickoff's (or a fan-out's) chains by state (`inspector.kickoff()`). */
export interface RunProgress {
  /** The kickoff id. */
  id: string;
  /** Its `lock_run`. */
  run: string;
  /** Chains that carry the run: the sum of the others. */
  started: LockCount;
  /** Scheduled or running. */
  live: LockCount;
  /** Failed for good. */
  failed: LockCount;
  /** Finished. */
  complete: LockCount;
  /** Cancelled by an operator. */
  cancelled: LockCount;
}

/** An entity a search found. */
export interface SearchHit<K = Key> {
  /** The entity's step. */
  step: StepSummary<K>;
  /** How the text matched it. */
  by: SearchReading;
}

/** Batches read from the store for one page at most: a list with few matches returns early, with a cursor. */
const MAX_BATCHES = 4;
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

/** What the operator's view reads of the configuration: the clock, the lease's duration, `stallAfter`, the retries, the redaction. */
export const INSPECT_SETTINGS = ['clock', 'leaseDuration', 'stallAfter', 'maxRetries', 'redact'] as const satisfies readonly SettingName[];
export type InspectSettings = Settings<typeof INSPECT_SETTINGS>;

/**
 * Lists and shows steps; made by `locker.inspect()`. `K` is the store's key type: its views carry
 * keys as `K` (a `DocumentReference` on a `FirestoreStore`) and write them as the store's users do
 * (`keyPath`), and `step()` takes one.
 */
export class Inspector<K = Key> {
  /** Turns the keys the store reads into `K`s; undefined when they are `Key`s already. */
  private readonly from: FromKey<K> | undefined;

  /** @internal */
  constructor(
    private readonly parts: Pick<Parts, 'locks' | 'reads' | 'dispatcher'> & { readonly config: InspectSettings },
    /** The schedules the code declares (`locker.recurring()`): a schedule the store has and this code does not shows so. */
    private readonly declared: () => ReadonlySet<string> = () => new Set(),
    /** Where the schedules' records live (the Locker's `scheduleNamespace`). */
    private readonly scheduleNamespace = '',
    /** The store's key type: how keys are handed out, taken, written and read back. */
    private readonly keys: KeyType<K> = DATASTORE_KEYS as KeyType<unknown> as KeyType<K>,
  ) {
    this.from = isDatastoreKeys(keys) ? undefined : (key) => keys.fromKey(key);
  }

  /** One page of schedules (`locker.recurring()`), newest declared first: next tick, last run, state. */
  schedules(page: { limit?: number; cursor?: string } = {}): Promise<SchedulePage> {
    return listSchedules({ reads: this.parts.reads, namespace: this.scheduleNamespace }, this.declared(), page);
  }

  /** Schedule `name` as `schedules()` shows it (one lookup); undefined until a tick wrote it. */
  async schedule(name: string): Promise<(ScheduleView & {
    /** Whether this code declares it (`locker.recurring()`). */
    declaredHere: boolean;
  }) | undefined> {
    const record = readSchedule(await this.parts.reads.get(scheduleKey(name, this.scheduleNamespace)));
    return record ? viewOf(record, this.declared().has(record.name)) : undefined;
  }

  /** One page of the steps in `query.state`, by last progress. */
  async list(query: ListQuery): Promise<StepPage<K>> {
    const reads = this.reads();
    checkList(query);
    const limit = query.limit ?? DEFAULT_LIMIT;
    const position = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const clock = this.clock(position?.now);
    const range = rangeFor(query.state, clock);
    const steps: StepSummary[] = [];
    let storeCursor = position?.store;
    for (let batch = 0; batch < MAX_BATCHES && steps.length < limit; batch++) {
      const page = await reads.queryLocks({
        kind: query.kind, namespace: query.namespace ?? '', order: query.order === 'newest' ? 'desc' : 'asc',
        limit: limit - steps.length, ...range, ...(storeCursor ? { cursor: storeCursor } : {}), ...(query.run !== undefined ? { run: query.run } : {}),
      });
      const views = page.entities.map(({ key, properties }) => this.summary(key, properties, clock));
      for (const view of await this.withLedgers(views, clock)) if (inList(view, query.state)) steps.push(view);
      storeCursor = page.cursor;
      if (!storeCursor) break;
    }
    const keyed = this.summaries(steps);
    return storeCursor ? { steps: keyed, cursor: encodeCursor({ now: clock.now, store: storeCursor }) } : { steps: keyed };
  }

  /** The view of an entity as lists show it: its secrets scrubbed from the error line, `redact` applied, its key written by the key type. */
  private summary(key: Key, properties: Properties, clock: ViewClock): StepSummary {
    const secrets = secretsOf(userProperties(properties), this.parts.config.redact);
    return redactView(this.written(viewStep(key, properties, clock, this.parts.dispatcher.encodeKey(key), secrets)), this.parts.config.redact);
  }

  /** A view whose `keyPath` is written as the store's users write keys. */
  private written<V extends StepSummary>(view: V): V {
    return this.keys.show === DATASTORE_KEYS.show ? view : { ...view, keyPath: this.keys.show(view.key) };
  }

  /** Views with their keys as `K`. */
  private summaries(views: StepSummary[]): StepSummary<K>[] {
    const from = this.from;
    return from ? views.map((v) => withKey(v, from)) : (views as StepSummary<unknown>[] as StepSummary<K>[]);
  }

  /**
   * The entities `text` names: a key as the status page writes it (`Counter:"counters-12"`,
   * ancestors included, looked up in each namespace of `scope`; a document's path such as
   * `Order/o-1` on a `FirestoreStore`), a key as `X-Lock-Key` encodes it,
   * or a chain id (`lock_chain`, queried per kind and namespace of `scope`). At most one lookup and
   * one query per kind and namespace, run concurrently. Each found entity once, with how it matched.
   */
  async search(text: string, scope: SearchScope): Promise<SearchHit<K>[]> {
    const clock = this.clock();
    const matches = await searchEntities(this.parts.reads, text, scope, { decode: decodeKey, parse: (t, namespaces) => this.keys.parse(t, namespaces) });
    const views = matches.map(({ key, properties }) => this.summary(key, properties, clock));
    return this.summaries(await this.withLedgers(views, clock)).map((step, i) => ({ step, by: matches[i]!.by }));
  }

  /** Whether the store counts (`Store.countLocks`): `counts()` needs it. */
  get canCount(): boolean {
    return this.parts.reads.countsLocks;
  }

  /**
   * The numbers of the overview, per kind and namespace of `scope`: steps failed, live (scheduled,
   * running or waiting), live with no progress for `stallAfter` (the stalled list's candidates:
   * those re-sent recently are queued), complete and cancelled. Each a count from the store (a count
   * aggregation where it has one, else a keys-only count), up to `cap` (10,000 by default; past it
   * the count says "at least"). Five counts per kind and namespace, all at once: their number does
   * not grow with the number of chains. `run` counts only the chains of one kickoff or fan-out.
   */
  async counts(scope: { kinds: readonly string[]; namespaces: readonly string[]; run?: string; cap?: number }): Promise<KindCounts[]> {
    const reads = this.parts.reads;
    if (!reads.countsLocks) throw new ConfigError('counts need a store with countLocks (DatastoreStore and MemoryStore have it).');
    const clock = this.clock();
    const cap = scope.cap ?? DEFAULT_COUNT_CAP;
    const stallEdge = new Date(clock.now - clock.stallAfter + 1);
    const count = (kind: string, namespace: string, state: StepState, tsBefore?: Date): Promise<LockCount> =>
      reads.countLocks({ kind, namespace, state, cap, ...(tsBefore ? { tsBefore } : {}), ...(scope.run !== undefined ? { run: scope.run } : {}) });
    const wanted = scope.kinds.flatMap((kind) => scope.namespaces.map((namespace) => ({ kind, namespace })));
    return Promise.all(wanted.map(async ({ kind, namespace }) => {
      const [failed, live, waitingLong, complete, cancelled] = await Promise.all([
        count(kind, namespace, StepState.failed), count(kind, namespace, StepState.scheduled),
        count(kind, namespace, StepState.scheduled, stallEdge), count(kind, namespace, StepState.complete),
        count(kind, namespace, StepState.cancelled),
      ]);
      return { kind, namespace, failed, live, waitingLong, complete, cancelled };
    }));
  }

  /**
   * Steps finished per minute since `since` (an hour ago by default; at most a day), with the p50
   * and p95 of how long their last attempt took, from the histories on the locks (`lock_hist`).
   * Read with one bounded query per kind, namespace and step state (scheduled, complete, failed,
   * cancelled): the entities whose `lock_ts` is within the window (a step's end writes it), newest
   * first, at most `cap` each (1,000 by default, the most one query reads), all at once. What the
   * caps or the histories' bound may have cut is said in `cut`.
   */
  async throughput(scope: { kinds: readonly string[]; namespaces?: readonly string[]; since?: Date; cap?: number }): Promise<Throughput> {
    const reads = this.reads();
    const now = this.parts.config.clock();
    const since = minuteOf(checkSince(scope.since, now));
    const cap = scope.cap ?? THROUGHPUT_CAP;
    if (!Number.isSafeInteger(cap) || cap < 1 || cap > MAX_QUERY_LIMIT) throw new RangeError(`cap must be 1 to ${MAX_QUERY_LIMIT}`);
    const namespaces = scope.namespaces ?? [''];
    const wanted = scope.kinds.flatMap((kind) => namespaces.flatMap((namespace) => THROUGHPUT_STATES.map((state) => ({ kind, namespace, state }))));
    const pages = await Promise.all(wanted.map((w) => reads.queryLocks({ ...w, order: 'desc', limit: cap, tsFrom: new Date(since) })));
    const steps: EndedStep[] = [];
    const cut = new Set<'entities' | 'history'>();
    let entities = 0;
    for (const page of pages) {
      if (page.cursor !== undefined && page.entities.length >= cap) cut.add('entities');
      for (const { properties } of page.entities) {
        entities++;
        const ended = endedSteps(storedHistory(properties.lock_hist), since, now, HISTORY_STEPS);
        if (ended.full) cut.add('history');
        for (const step of ended.steps) steps.push(step);
      }
    }
    return {
      since: new Date(since), now: new Date(now), buckets: bucketsOf(steps, since, now), finished: steps.length, ...overall(steps),
      entities, cap, cut: [...cut].sort(),
    };
  }

  /**
   * Bulk kickoffs (`scheduleMany()`), newest first, a page at a time: each its record (total,
   * kinds, when, how its calls settled) and its progress now (chains pending, complete, failed,
   * cancelled, from counts by `lock_run`), its age and its oldest pending chain (`runs.ts`).
   */
  async kickoffs(page: { limit?: number; cursor?: string } = {}): Promise<RowPage<KickoffRow<K>>> {
    const rows = await kickoffRows(this.rowParts(), page);
    return { ...rows, rows: rows.rows.map((r) => this.kickoffWith(r)) };
  }

  /** The kickoff `kickoffId` as a row (its record, progress, age, oldest pending chain); undefined when it left no record. */
  async kickoffRow(kickoffId: string): Promise<KickoffRow<K> | undefined> {
    const row = await kickoffRowOf(this.rowParts(), kickoffId);
    return row && this.kickoffWith(row);
  }

  private kickoffWith(row: KickoffRow): KickoffRow<K> {
    return this.from ? kickoffRowWith(row, this.from) : (row as KickoffRow<unknown> as KickoffRow<K>);
  }

  private fanOutWith(row: FanOutRow): FanOutRow<K> {
    return this.from ? fanOutRowWith(row, this.from) : (row as FanOutRow<unknown> as FanOutRow<K>);
  }

  /** Fan-outs of one namespace (the default one unless named), newest first, a page at a time, joined ones included. */
  async fanOuts(page: { limit?: number; cursor?: string; namespace?: string } = {}): Promise<RowPage<FanOutRow<K>>> {
    const rows = await fanOutRows(this.rowParts(), page);
    return { ...rows, rows: rows.rows.map((r) => this.fanOutWith(r)) };
  }

  /** The fan-out `id` (in its parent's namespace) as a row; undefined when there is none. */
  async fanOut(id: string, namespace?: string): Promise<FanOutRow<K> | undefined> {
    const row = await fanOutRowOf(this.rowParts(), id, namespace);
    return row && this.fanOutWith(row);
  }

  private rowParts(): RowParts {
    return { reads: this.parts.reads, encode: (k) => this.parts.dispatcher.encodeKey(k), show: (k) => this.keys.show(k), now: this.parts.config.clock() };
  }

  /**
   * A bulk kickoff's progress (`scheduleMany({ kickoffId })`): its chains by state, counted through
   * `lock_run` (equalities only: Datastore's built-in indexes serve them, no composite index), four
   * counts per kind and namespace of `scope`, all at once. `started` is their sum: the chains the
   * kickoff started that still carry its run (an entity a later chain took over counts no more).
   */
  async kickoff(kickoffId: string, scope: { kinds: readonly string[]; namespaces: readonly string[]; cap?: number }): Promise<RunProgress> {
    if (typeof kickoffId !== 'string' || kickoffId === '' || kickoffId.length > 400) throw new RangeError('a kickoff id is a non-empty string of at most 400 characters');
    return this.runProgress(kickoffRun(kickoffId), kickoffId, scope);
  }

  private async runProgress(run: string, id: string, scope: { kinds: readonly string[]; namespaces: readonly string[]; cap?: number }): Promise<RunProgress> {
    const reads = this.parts.reads;
    if (!reads.countsLocks) throw new ConfigError('a kickoff\'s progress needs a store with countLocks (DatastoreStore and MemoryStore have it).');
    const cap = scope.cap ?? DEFAULT_COUNT_CAP;
    const wanted = scope.kinds.flatMap((kind) => scope.namespaces.map((namespace) => ({ kind, namespace })));
    const states = [StepState.scheduled, StepState.failed, StepState.complete, StepState.cancelled] as const;
    const counts = await Promise.all(wanted.flatMap(({ kind, namespace }) => states.map((state) => reads.countLocks({ kind, namespace, state, run, cap }))));
    const sum = (state: StepState): LockCount => counts.filter((_, i) => states[i % states.length] === state)
      .reduce((a, c) => ({ count: a.count + c.count, exact: a.exact && c.exact }), { count: 0, exact: true });
    const live = sum(StepState.scheduled);
    const failed = sum(StepState.failed);
    const complete = sum(StepState.complete);
    const cancelled = sum(StepState.cancelled);
    const started = [live, failed, complete, cancelled].reduce((a, c) => ({ count: a.count + c.count, exact: a.exact && c.exact }), { count: 0, exact: true });
    return { id, run, started, live, failed, complete, cancelled };
  }

  /** What the Locker's queue holds now, when it can tell (`Queue.depth`: `LocalQueue` can, Cloud Tasks' v2 API cannot). */
  queueDepth(): Promise<QueueDepth | undefined> {
    return this.parts.dispatcher.depth();
  }

  /**
   * Entities that owe an alert (claimed, not yet marked sent), found where the sweep finds them:
   * among the first `limit` ledger records due (one query per namespace the store sweeps, then one
   * lookup of their entities). `cut` says the records due went past `limit`, so more may owe one.
   */
  async alertsOwed(limit = DEFAULT_LIMIT): Promise<AlertsOwed<K>> {
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1_000) throw new RangeError('limit must be 1 to 1,000');
    const clock = this.clock();
    const due = await this.parts.reads.listDue(new Date(clock.now), limit);
    const seen = new Set<string>();
    const keys = due.records.map((r) => r.key).filter((k) => {
      const id = keyIdentity(k);
      return !seen.has(id) && (seen.add(id), true);
    });
    const found = await this.parts.reads.getMany(keys);
    const steps = keys.flatMap((key, i) => {
      const props = found[i];
      if (!props) return [];
      const view = this.summary(key, props, clock);
      return view.alertsOwed > 0 ? [view] : [];
    });
    return { steps: this.summaries(steps), cut: due.records.length >= limit };
  }

  /**
   * The views with their ledger records' sends, read in one lookup for the page's waiting steps:
   * a step re-sent within the sweep's threshold is queued, not stalled (`withLedger`).
   */
  private async withLedgers(views: StepSummary[], clock: ViewClock): Promise<StepSummary[]> {
    const waiting = views.filter((v) => v.task !== undefined && v.state !== undefined && WAITING.has(v.state));
    if (waiting.length === 0) return views;
    const records = await this.parts.reads.ledgers(waiting.map((v) => ({ key: v.key, id: v.task! })));
    const byView = new Map(waiting.map((v, i) => [v, records[i]]));
    return views.map((v) => (byView.has(v) ? withLedger(v, byView.get(v), clock) : v));
  }

  /**
   * The detail of the entity at `key`, or undefined when it does not exist: the entity and its
   * step's ledger record, read by key in one transaction (two lookups, never a query). A key the
   * store cannot hold (another client's `DocumentReference`) rejects with a `TypeError`.
   */
  async step(wanted: K): Promise<StepDetail<K> | undefined> {
    const key = this.keys.toKey(wanted);
    const detail = await this.detail(key);
    return detail && this.detailWith(detail);
  }

  /** A detail with its keys as `K`. */
  private detailWith(detail: StepDetail): StepDetail<K> {
    const from = this.from;
    if (!from) return detail as StepDetail<unknown> as StepDetail<K>;
    const { fanOut, fanOuts, parent, ...rest } = detail;
    return {
      ...rest, key: from(detail.key), fanOuts: fanOuts.map((r) => fanOutRowWith(r, from)),
      ...(fanOut && { fanOut: fanOutViewWith(fanOut, from) }),
      ...(parent && { parent: withKey(parent, from) }),
    };
  }

  private async detail(key: Key): Promise<StepDetail | undefined> {
    const read = await this.parts.locks.transact(async (tx) => {
      const props = await tx.get(key);
      if (!props) return undefined;
      const task = readLock(props).task;
      return { props, record: task === undefined ? undefined : await tx.getLedger(key, task) };
    });
    if (!read) return undefined;
    const clock = this.clock();
    const lock = readLock(read.props);
    const secrets = secretsOf(userProperties(read.props), this.parts.config.redact);
    const view = withLedger(this.written(viewStep(key, read.props, clock, this.parts.dispatcher.encodeKey(key), secrets)), read.record, clock);
    const rows = this.rowParts();
    const [fanOuts, parent] = await Promise.all([
      lock.chain === undefined ? [] : fanOutsOfChain(rows, key, lock.chain),
      parentOf(rows, key, lock.run),
    ]);
    const detail: StepDetail = {
      ...redactView(view, this.parts.config.redact),
      alerts: lock.alerts, maxRetries: this.parts.config.maxRetries,
      leaseDurationMs: clock.leaseDuration, stallAfterMs: clock.stallAfter, fanOuts,
      // The history holds no payload and no error text; a route that holds a redacted value is scrubbed of it.
      history: readHistory(lock.hist ?? '').map((entry) => (secrets.length > 0 ? { ...entry, route: scrub(entry.route, secrets) } : entry)),
    };
    if (parent) detail.parent = parent;
    if (lock.err) detail.error = splitError(scrub(lock.err, secrets));
    // The fan-out the step before started (the step is its join), else the one this step started:
    // still being added, or left behind when the step failed or was cancelled before its seal.
    const fanOut = await viewFanOut(this.parts, key, lock.chain, lock.seq - 1, rows)
      ?? await viewFanOut(this.parts, key, lock.chain, lock.seq, rows);
    if (fanOut) detail.fanOut = await this.scrubFanOut(fanOut, secrets);
    if (read.record && read.record.seq === lock.seq && keyIdentity(read.record.key) === keyIdentity(key)) {
      detail.ledger = viewLedger(read.record, clock.now);
      detail.startedAt = read.record.createdAt;
      detail.startedAgeMs = Math.max(0, clock.now - read.record.createdAt.getTime());
    }
    return detail;
  }
  /**
   * A fan-out's sample failures with the Locker's `redact` applied: each error text scrubbed of the
   * parent's secrets and of its own child entity's (read by key: at most five).
   */
  private async scrubFanOut(view: FanOutView, parentSecrets: readonly string[]): Promise<FanOutView> {
    const redaction = this.parts.config.redact;
    if (!redaction) return view;
    const failures = await Promise.all(view.failures.map(async (f) => {
      if (f.error === undefined) return f;
      const child = await this.parts.reads.get(f.key);
      return { ...f, error: scrub(f.error, [...parentSecrets, ...(child ? secretsOf(child, redaction) : [])]) };
    }));
    return { ...view, failures };
  }


  /**
   * The newest bulk operations (`locker.bulk()`, the status page's bulk actions) of `namespaces`
   * (an operation lives in its targets' namespace; default: the default one), by their last
   * progress, at most `limit` (1 to 100, default 20), each with its progress.
   */
  operations(options: { limit?: number; namespaces?: readonly string[] } = {}): Promise<OperationView[]> {
    return listOperations(this.reads(), options.namespaces ?? [''], options.limit ?? 20, this.parts.config.clock());
  }

  /** One bulk operation with its progress, by id and namespace (its targets'; default: the default one); undefined when there is none. */
  operation(id: string, namespace?: string): Promise<OperationView | undefined> {
    return getOperation(this.parts.reads, id, namespace, this.parts.config.clock());
  }

  /** @internal The clock and durations states are computed with (a cursor keeps its page's `now`). */
  clock(now = this.parts.config.clock()): ViewClock {
    const { leaseDuration } = this.parts.config;
    return { now, leaseDuration, stallAfter: stallAfterOf(this.parts) };
  }

  private reads(): StoreReads {
    const { reads } = this.parts;
    if (!reads.queriesLocks) {
      throw new ConfigError('locker.inspect() needs a store with queryLocks (DatastoreStore and MemoryStore have it).');
    }
    return reads;
  }
}

/** The most entities `throughput()` reads per kind, namespace and state, by default: one query's page. */
export const THROUGHPUT_CAP = MAX_QUERY_LIMIT;

/** The step states whose entities may have ended a step within a window (a step's end writes `lock_ts`). */
const THROUGHPUT_STATES: readonly StepState[] = [StepState.scheduled, StepState.complete, StepState.failed, StepState.cancelled];

/** The longest window `throughput()` draws: a day. */
const MAX_WINDOW_MS = 24 * 60 * MINUTE_MS;

/** The window's start: `since`, an hour before `now` when left out; a `RangeError` unless within the last day. */
function checkSince(since: Date | undefined, now: number): number {
  if (since === undefined) return now - 60 * MINUTE_MS;
  if (!(since instanceof Date) || Number.isNaN(since.getTime())) throw new RangeError('since must be a valid Date');
  if (since.getTime() >= now || now - since.getTime() > MAX_WINDOW_MS) throw new RangeError('since must be within the last 24 hours');
  return since.getTime();
}

/** How long without progress makes a scheduled step stalled: the Locker's `stallAfter`, as the sweep sees it. */
export function stallAfterOf(parts: { readonly config: Pick<Config, 'stallAfter'> }): number {
  return parts.config.stallAfter;
}

/** The indexed query range that holds every step of a state (the view then keeps the ones that are). */
function rangeFor(state: InspectState, clock: ViewClock): Pick<LockQuery, 'state' | 'tsBefore' | 'tsFrom'> {
  const leaseEdge = new Date(clock.now - clock.leaseDuration);
  const stallEdge = new Date(clock.now - clock.stallAfter);
  switch (state) {
    case InspectState.failed: return { state: StepState.failed };
    case InspectState.complete: return { state: StepState.complete };
    case InspectState.cancelled: return { state: StepState.cancelled };
    case InspectState.running: return { state: StepState.scheduled, tsFrom: leaseEdge };
    case InspectState.stale: return { state: StepState.scheduled, tsBefore: new Date(leaseEdge.getTime() + 1) };
    case InspectState.stalled: return { state: StepState.scheduled, tsBefore: new Date(stallEdge.getTime() + 1) };
    // A step waiting past stallAfter whose task was re-sent within the sweep's threshold is queued: listed here.
    case InspectState.scheduled: return { state: StepState.scheduled };
  }
}

function checkList(query: ListQuery): void {
  if (!INSPECT_STATES.includes(query.state)) throw new RangeError(`state must be one of ${INSPECT_STATES.join(', ')}; got ${String(query.state)}`);
  if (typeof query.kind !== 'string' || query.kind === '') throw new RangeError('a list needs a kind');
  if (query.order !== undefined && query.order !== 'oldest' && query.order !== 'newest') throw new RangeError('order must be "oldest" or "newest"');
  const limit = query.limit ?? DEFAULT_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new RangeError(`limit must be 1 to ${MAX_LIMIT}`);
  if (query.run !== undefined && (typeof query.run !== 'string' || query.run === '' || query.run.length > 200)) throw new RangeError('run must be a kickoff\'s or a fan-out\'s run (k:…, f:…)');
}

interface Position {
  /** The `now` of the first page, so every page of a list draws the same lines. */
  now: number;
  store: string;
}

function encodeCursor(position: Position): string {
  return Buffer.from(JSON.stringify([position.now, position.store])).toString('base64url');
}

function decodeCursor(cursor: string): Position {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString());
    if (Array.isArray(value) && typeof value[0] === 'number' && typeof value[1] === 'string') return { now: value[0], store: value[1] };
  } catch {
    // fall through
  }
  throw new RangeError('the cursor is not one locker.inspect() handed out');
}

/** A step's view with the Locker's `redact` applied to its properties (`viewStep` scrubbed their secrets from the error line before its cut). */
function redactView<V extends StepSummary>(view: V, redaction: Redaction | undefined): V {
  if (!redaction) return view;
  return { ...view, properties: redactProperties(view.properties, redaction).properties };
}

/** A fan-out child's fan-out and parent, from the header its `lock_run` names (one lookup). */
async function parentOf(parts: RowParts, key: Key, run: string | undefined): Promise<StepDetail['parent']> {
  const id = fanOutOfRun(run);
  if (id === undefined) return undefined;
  const header = await getHeader(parts, id, key.namespace);
  if (!header) return undefined;
  return { fanOut: id, key: header.parent, encodedKey: parts.encode(header.parent), keyPath: parts.show(header.parent) };
}
