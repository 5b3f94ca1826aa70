/**
 * The public contracts of datastore-locker, in one place: the lock fields, the store, queue,
 * alerter and authenticator plug-ins, and what a task handler is given.
 */
import type { Key } from '@google-cloud/datastore';
import type { IncomingHttpHeaders } from 'node:http';

export type { Key };

/** An entity's stored properties, as a store reads and writes them (lock fields included). */
export type Properties = Record<string, unknown>;

/** A JSON value: what a task payload may be. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The state of the current step of a chain, stored in `lock_state`. */
export const StepState = {
  /** Step `lock_seq` is scheduled: it runs when its task arrives (held while `lock_req` is set). */
  scheduled: 'scheduled',
  /** The chain finished: step `lock_seq - 1` completed and nothing was scheduled after it. */
  complete: 'complete',
  /** Step `lock_seq` failed for good; it never runs again. */
  failed: 'failed',
  /** The operator cancelled the chain at step `lock_seq`: it never runs; its tasks are dropped. */
  cancelled: 'cancelled',
} as const;
export type StepState = (typeof StepState)[keyof typeof StepState];

/**
 * The lock fields stored on a lockable entity. The first four have the Go library's names and
 * meanings, so both libraries can share data; the rest are this library's additions.
 */
export interface LockFields {
  /** When the lock fields were last written (lease taken or renewed, step scheduled). */
  lock_ts: Date;
  /** Id of the attempt that holds the lease; empty when free. */
  lock_req: string;
  /** Sequence number of the current step. */
  lock_seq: number;
  /** Failed attempts of the current step. */
  lock_try: number;
  /** State of the current step; absent on entities written by the Go library (then `scheduled`). */
  lock_state?: StepState;
  /** Id of the chain the current step belongs to; a kickoff starts a new one. */
  lock_chain?: string;
  /** The tracked work that started the chain: `k:<kickoffId>` (a bulk kickoff), `f:<fan-out id>` (a fan-out child); kept by every step of the chain. */
  lock_run?: string;
  /** Name of the task that carries the current step, while it is scheduled. */
  lock_task?: string;
  /** The last error of the current step: message and stack, size-bounded. */
  lock_err?: string;
  /** Alerts already sent for this entity, as `reason:seq`, so each is sent once per step. */
  lock_alerts?: string[];
  /** The chain's last steps, newest first, a line each (`rules/step-history.ts`): at most 10 entries, 1,750 bytes. */
  lock_hist?: string;
}

/** Names of every lock field, for index exclusion and for separating user properties. */
export const LOCK_FIELD_PREFIX = 'lock_';

// ---------------------------------------------------------------------------------------------
// Store

/**
 * The ledger of live steps (docs/design.md, section 5): one record per scheduled step, committed with the
 * step, kept while the step is live (scheduled or running) and removed lazily once it finished,
 * failed for good or moved on. `sweep()` reads the records that are due and re-delivers every
 * stalled step from them.
 */
export interface LedgerRecord {
  /**
   * The record's id within its namespace: the name of the step's first task, which is also the
   * entity's `lock_task` while the step is live. Unique per step of a chain: the same step
   * scheduled again (an entity restored from a backup) has the same id.
   */
  id: string;
  /** The entity whose step this is (the record lives in its namespace). */
  key: Key;
  /** The step's sequence number. */
  seq: number;
  /** The chain the step belongs to. */
  chain: string;
  /** The handler path the step's tasks are sent to, e.g. `/process`. */
  path: string;
  /** The tasks' body: the payload as JSON text. */
  body: string;
  /** When the step should run; undefined means at once. */
  scheduleTime?: Date;
  /** When the record was committed (with the step). */
  createdAt: Date;
  /** The name of the last task sent (or being sent) for the step: `id` first, a new name at each re-delivery. */
  task: string;
  /** Tasks sent for the step so far, the first included. */
  sends: number;
  /** When the last task was sent (or the sweep last claimed a re-delivery). */
  sentAt: Date;
  /** Re-deliveries in a row whose task could not be created (they back off). */
  failures: number;
  /** When the sweep next looks at the step. The only indexed field: the sweep's query reads `due <= now`. */
  due: Date;
}

/** A ledger record to read: the entity whose step it carries, and its id. */
export interface LedgerLookup {
  /** The entity's key. */
  key: Key;
  /** The record's id (the task's name), in the entity's namespace. */
  id: string;
}

/** What a sweep's query found: the due records, oldest due first, and records it could not read. */
export interface DueLedger {
  /** The due records, oldest due first. */
  records: LedgerRecord[];
  /** Records that are not valid ledger records (skipped; the sweep logs them), as `namespace:id: why`. */
  malformed: string[];
}

/** Which entities to list: an equality on `lock_state` and a range and order on `lock_ts`. */
export interface LockQuery {
  /** The entities' kind. */
  kind: string;
  /** Their namespace; `''` or undefined is the default one. */
  namespace?: string;
  /** `lock_state` equals this. */
  state: StepState;
  /** By `lock_ts`: `asc` is oldest first, `desc` newest first (ties in key order). */
  order: 'asc' | 'desc';
  /** Only entities whose `lock_ts` is before this instant. */
  tsBefore?: Date;
  /** Only entities whose `lock_ts` is at or after this instant. */
  tsFrom?: Date;
  /**
   * Only entities whose `lock_run` equals this: the tracked work (a bulk kickoff, a fan-out) that
   * started the entity's current chain.
   */
  run?: string;
  /** At most this many entities (1 to 1 000). */
  limit: number;
  /** Where the previous page of the same query ended (its `cursor`). */
  cursor?: string;
}

/** What to count (`Store.countLocks`): a `LockQuery`'s filters, and how far to count. */
export interface LockCountQuery extends Pick<LockQuery, 'kind' | 'namespace' | 'state' | 'tsBefore' | 'tsFrom' | 'run'> {
  /** Count up to this many (1 to 100,000): a count that reaches it is "at least" (`exact: false`). */
  cap: number;
}

/** A count of entities (`Store.countLocks`). */
export interface LockCount {
  /** How many matched, up to the query's `cap`. */
  count: number;
  /** False when the count reached the cap: at least `count` match ("10,000+"). */
  exact: boolean;
}

/** An entity a query found. */
export interface FoundEntity {
  /** The entity's key. */
  key: Key;
  /** Its stored properties, lock fields included. */
  properties: Properties;
}

/** One page of a `LockQuery`. */
export interface LockPage {
  /** The entities found, in the query's order. */
  entities: FoundEntity[];
  /** Pass it as the next query's `cursor` to go on; undefined when there is nothing more. */
  cursor?: string;
}

/**
 * Records of one kind, newest first by one time property (`Store.listRecords`): the operator's
 * lists of kickoff runs and fan-outs. Served by the property's built-in index (descending).
 */
export interface RecordQuery {
  /** The records' kind. */
  kind: string;
  /** Their namespace; `''` or undefined is the default one. */
  namespace?: string;
  /** The time property they are ordered by, newest first (it must be indexed; records without it are not listed). */
  newestBy: string;
  /** At most this many records (1 to 1,000). */
  limit: number;
  /** Where the previous page of the same query ended (its `cursor`). */
  cursor?: string;
}

/**
 * A keys-only query on one property of one kind (`Store.findKeys`): an equality on a string, or
 * `<=` a time. Served by Datastore's built-in single-property indexes; eventually consistent on
 * legacy Datastore, so a caller confirms what it finds by key lookups.
 */
export interface KeyQuery {
  /** The entities' kind. */
  kind: string;
  /** Their namespace (`''` is the default one); undefined: every namespace the store sweeps (as `listDue`). */
  namespace?: string;
  /** The property filtered on (it must be indexed). */
  property: string;
  /** Entities whose property equals this string. */
  equals?: string;
  /** Entities whose property is a time at or before this one. */
  atOrBefore?: Date;
  /** At most this many keys (1 to 1,000), in no promised order. */
  limit: number;
}

/**
 * The reads and writes of one transaction. Reads happen at once; writes are buffered and applied
 * atomically at commit.
 */
export interface StoreTransaction {
  /** Reads an entity; undefined when it does not exist. */
  get(key: Key): Promise<Properties | undefined>;
  /**
   * Reads several entities (at most 1,000) in one round trip where the store can (Datastore: one
   * lookup); one result per key, in order. Optional: callers fall back to `get` per key
   * (`getAll`, `store/transaction-reads.ts`).
   */
  getMany?(keys: readonly Key[]): Promise<(Properties | undefined)[]>;
  /** Writes (replaces) an entity; the named properties are excluded from indexes. */
  put(key: Key, properties: Properties, excludeFromIndexes: readonly string[]): void;
  /** Deletes an entity. */
  delete(key: Key): void;
  /** Reads the ledger record `id` in `key`'s namespace; undefined when missing or malformed. */
  getLedger(key: Key, id: string): Promise<LedgerRecord | undefined>;
  /** Adds or replaces a ledger record, committed with the rest of the transaction. */
  putLedger(record: LedgerRecord): void;
  /** Removes the ledger record `id` in `key`'s namespace, with the rest of the transaction. */
  deleteLedger(key: Key, id: string): void;
}

/**
 * Whether an entity (undefined: it does not exist), as stored now, still needs its ledger record
 * `id`: the rule a removal of a finished step's record is checked by (`recordNeeded`, `rules/ledger-record.ts`).
 */
export type LedgerNeeded = (entity: Properties | undefined, id: string) => boolean;

/** A ledger record by name: the entity whose step it carries (its namespace is the record's), and its id. */
export interface LedgerRef {
  /** The entity's key. */
  readonly key: Key;
  /** The record's id (the task's name). */
  readonly id: string;
  /**
   * For `retireLedgerMany`: the version the record was read at (`StepRead.recordVersion`), when the
   * step that finished read it. The record is then removed only while still at that version, with
   * nothing read; without it, the record and its entity are read and `needed` judges.
   */
  readonly version?: unknown;
}

/**
 * An entity as a versioned read found it. `version` is the store's own, opaque to everyone else:
 * it says which version was read (and whatever else the store needs to write the entity back
 * faithfully).
 */
export interface Snapshot {
  /** The entity's stored properties, lock fields included. */
  readonly properties: Properties;
  /** The version read, in the store's own form: hand it back to `replaceIfUnchanged`, never look inside. */
  readonly version: unknown;
}

/** An entity as a batched read found it, or found it absent, with the version it was read at. */
export interface VersionedRead {
  /** The key read. */
  readonly key: Key;
  /** The entity's stored properties; undefined when it does not exist. */
  readonly properties: Properties | undefined;
  /** The version read, in the store's own form (absent entities included): hand it back to `replaceMany`. */
  readonly version: unknown;
}

/** One write of `Store.replaceMany`: an entity at the version it was read at, and its ledger record. */
export interface ConditionalWrite {
  /** The read the write depends on (its key is the entity's). */
  read: VersionedRead;
  /** The properties to store. */
  properties: Properties;
  /** Properties kept out of indexes. */
  excludeFromIndexes: readonly string[];
  /** The ledger record of the step the write schedules. */
  record: LedgerRecord;
  /**
   * An entity to store with the write: the kickoff's record of the chain it starts (a bulk
   * kickoff's `LockerKickoff` record, a fan-out child's record). Stored in the entity's own commit,
   * and only while it is still at the version `marker.read` found (a marker changed meanwhile is
   * left as it is; the entity's write does not depend on it). Where the entity's commit is not
   * atomic (Datastore's `NON_TRANSACTIONAL` commit), a marker may be stored though its entity met
   * a conflict: the caller reads it again and knows it wrote it.
   */
  marker?: KickoffMarker;
}

/** The record a bulk kickoff keeps of a chain it started (kind `LockerKickoff`): an entity to store with the kickoff's write. */
export interface KickoffMarker {
  /** Its key: kind `LockerKickoff`, named by the chain id, in the entity's namespace. */
  key: Key;
  /** Its properties: the chain's first step and when it started. */
  properties: Properties;
  /** Properties kept out of indexes (all of them). */
  excludeFromIndexes: readonly string[];
  /** The marker as read in the kickoff's lookup (absent ones included): written only while still at that version. Without it, written whatever is there. */
  read?: VersionedRead;
}

/** What `Store.replaceMany` did with one write. */
export type ConditionalOutcome =
  | {
    /** Written: the entity is at the new version and its ledger record is stored. */
    outcome: 'written';
  }
  | {
    /** Not written: the entity changed (or was created or deleted) since it was read. */
    outcome: 'conflict';
  }
  | {
    /** Not written: the store refused it or could not be reached (`StoreRejectedError`, `StoreUnavailableError`, ...). */
    outcome: 'error';
    /** Why. */
    error: Error;
  };

/**
 * Transactional persistence of entities. A store only reads and writes: every lease rule lives
 * above it. Errors it raises: `ContentionError` when a transaction aborts on contention (retried
 * whole by the caller), `StoreUnavailableError` for any other failure to reach the store.
 */
export interface Store {
  /**
   * Runs `fn` in one transaction: commits when it resolves, rolls back when it throws (and
   * rethrows). Does not retry: the Locker retries the whole read-check-write on contention.
   */
  transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T>;
  /** A strongly consistent read outside any transaction. */
  get(key: Key): Promise<Properties | undefined>;
  /** A strongly consistent read outside any transaction, with the entity's version. */
  read(key: Key): Promise<Snapshot | undefined>;
  /**
   * `read(key)` and ledger record `id` in the entity's namespace, in one round trip where the store
   * can (Datastore: one lookup of both keys); a missing or malformed record is undefined. When the
   * store has it, `handle()` checks an arriving task against the ledger record of its step (route
   * and body) at no extra round trip; without it, that check is skipped.
   */
  readWithLedger?(key: Key, id: string): Promise<StepRead>;
  /**
   * The ledger records named (each an entity's key and a record id, in that entity's namespace), in
   * one lookup where the store can; a missing or malformed record is undefined. At most 1,000 a call.
   * Needed by the status router only (a page's queued steps show their sends); without it, each
   * record is read on its own.
   */
  readLedgerMany?(refs: readonly LedgerLookup[]): Promise<(LedgerRecord | undefined)[]>;
  /**
   * Compare-and-swap on one entity, outside any transaction: replaces it with `properties` only if
   * it is still at the version `snapshot` was read at. Resolves to the new snapshot, or to
   * undefined when the entity changed or was deleted since (then nothing was written). One round
   * trip where the store can (Datastore's `baseVersion`): the Locker's hot path is a read and two
   * of these.
   */
  replaceIfUnchanged(key: Key, snapshot: Snapshot, properties: Properties, excludeFromIndexes: readonly string[]): Promise<Snapshot | undefined>;
  /**
   * The ledger records due at `now` (`due <= now`), oldest due first, at most `limit`: one indexed
   * query per namespace. Records that cannot be read as ledger records are reported, not thrown,
   * and do not count toward `limit`: however many of them are due first, the well-formed records
   * behind them are listed (a store may bound how many it reads past: `DatastoreStore` 10,000 per
   * namespace).
   */
  listDue(now: Date, limit: number): Promise<DueLedger>;
  /**
   * Removes the ledger records named (at most 500 a call): the removals of finished steps, grouped.
   * A record named with its `version` goes only while it is still at that version (one written
   * again since is kept), with nothing read. Any other goes only if `needed(entity, id)`, asked of
   * its entity as stored when the record is removed, says its step no longer needs it, and only if
   * the record is still the one that was judged. A missing record is no error. `DatastoreStore`
   * reads what it must judge in one lookup and removes in one commit whose deletes carry the
   * records' versions. Optional: without it, each record is removed in a transaction of its own
   * that reads its entity.
   */
  retireLedgerMany?(records: readonly LedgerRef[], needed: LedgerNeeded): Promise<void>;
  /**
   * Lockable entities of one kind and namespace in one step state, ordered by `lock_ts`, a page at
   * a time: an indexed query (`lock_state`, `lock_ts`), never a scan of the kind. Needed by
   * `locker.inspect()` and the status router only.
   */
  queryLocks?(query: LockQuery): Promise<LockPage>;
  /**
   * How many entities a `LockQuery`'s filters match, up to `query.cap`: one count aggregation where
   * the backend has one, else a bounded keys-only query. Needed by the status page's counts only.
   */
  countLocks?(query: LockCountQuery): Promise<LockCount>;
  /**
   * Records of one kind, newest first by a time property, a page at a time (`RecordQuery`): the
   * operator's lists of kickoff runs and fan-outs. Needed by `locker.inspect().kickoffs()` and
   * `fanOuts()` only.
   */
  listRecords?(query: RecordQuery): Promise<LockPage>;
  /**
   * The keys of entities matching `query`, at most `query.limit`, in no promised order (possibly
   * fewer than match). Needed by fan-out (`ctx.fanOut()`) only: its completion check and its sweep.
   */
  findKeys?(query: KeyQuery): Promise<Key[]>;
  /**
   * Reads many entities at once (`scheduleMany()` asks for at most 1,000 keys a call), strongly
   * consistent, each with the version a conditional write compares: a missing entity is read too,
   * as absent at its own version. One answer per key, in the keys' order. Optional: without it,
   * `scheduleMany()` starts each chain with its own transaction, as `schedule()` does.
   */
  readMany?(keys: readonly Key[]): Promise<VersionedRead[]>;
  /**
   * Conditional writes of many entities, each with its ledger record: each entity is written only
   * if it is still at the version it was read at (still absent, if it was read absent), and its
   * record is stored once it is written (a record may also stay behind for a write that conflicted:
   * the caller removes it, or the sweep does). Entities are independent: one that changed meanwhile
   * is reported `conflict`, one the store refuses is reported with its error, and neither stops
   * the others. One outcome per write, in order. Optional, with `readMany`.
   */
  replaceMany?(writes: readonly ConditionalWrite[]): Promise<ConditionalOutcome[]>;
  /** The project id keys are encoded with (the `app` of a legacy url-safe key), if known. */
  readonly projectId?: string;
  /**
   * Optional set-up, e.g. resolving the project id. The Locker calls it once when it is built if
   * it needs the project id (no `keyAppId` given) and `projectId` is not known yet; it must be
   * safe to call more than once.
   */
  init?(): Promise<void>;
  /** Optional clean-up; the Locker does not call it, the store's owner does. */
  shutdown?(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Queue

/** Header names of a task request. */
export const Headers = {
  /** The entity's key, in the legacy url-safe encoding the Go library uses. */
  key: 'x-lock-key',
  /** The step's sequence number. */
  seq: 'x-lock-seq',
  /** The chain the step belongs to (this library's addition; Go tasks do not send it). */
  chain: 'x-lock-chain',
  /**
   * On a re-delivery by `sweep()`: which send of the step this task is (2 for the first
   * re-delivery). Such a task is decided on a fresh read, never from the duplicate cache.
   */
  send: 'x-lock-send',
} as const;

/** One task to create, as the Locker hands it to a queue. */
export interface TaskRequest {
  /** Short task name (the last path segment of a Cloud Tasks task name). */
  name: string;
  /** The handler path, e.g. `/process`. */
  path: string;
  /** Headers to send: at least `X-Lock-Key` and `X-Lock-Seq`. */
  headers: Record<string, string>;
  /** The JSON body. */
  body: string;
  /** When the task should run; undefined means now. */
  scheduleTime?: Date;
}

/** What a task request carries in its headers, checked by the queue's authenticator. */
export interface AuthRequest {
  /** The HTTP method, e.g. `POST`. */
  method: string;
  /** The path and query the request was sent to. */
  url: string;
  /** The request's headers, names in lower case (as Node gives them). */
  headers: IncomingHttpHeaders;
}

/** What `Store.readWithLedger` read: an entity and the ledger record of its step. */
export interface StepRead {
  /** The entity, as `read()` gives it; undefined when it does not exist. */
  snapshot: Snapshot | undefined;
  /** The ledger record asked for; undefined when it does not exist or is malformed. */
  record: LedgerRecord | undefined;
  /**
   * The record's version as read, in the store's own form (opaque to everyone else): hand it to
   * `retireLedgerMany` to remove the record only while it is still that version. Undefined when
   * the record does not exist (or the store does not say).
   */
  recordVersion?: unknown;
}

/** An authenticator's answer: accept, or refuse with 401 (no or bad credentials) or 403. */
export type AuthVerdict =
  | {
    /** The request is accepted. */
    ok: true;
    /**
     * The SHA-256 (lowercase hex) of the body the credential was issued for, when it binds one
     * (`LocalQueue`'s signature does): a task route then answers 401, before the store is read, to a
     * request whose payload, as JSON, hashes otherwise.
     */
    bodySha256?: string;
    /**
     * Who the request comes from, when the authenticator knows (an email, a service account): the
     * status router writes it as "who" in the audit line and on the row of a bulk operation.
     * Optional: without it the operation says nobody was named.
     */
    principal?: string;
  }
  | {
    /** The request is refused. */
    ok: false;
    /** 401 when credentials are missing or bad, 403 when they are good but not allowed. */
    status: 401 | 403;
    /** Why, for the log line (never sent to the caller). */
    reason: string;
  };

/** Decides whether a request really comes from the task queue. */
export type Authenticator = (req: AuthRequest) => Promise<AuthVerdict> | AuthVerdict;

/**
 * Task delivery. `enqueue` resolves once the task exists (a task that already exists under the
 * same name counts as created) and rejects with `QueueError` otherwise.
 */
export interface Queue {
  /** Creates the task; resolves once it exists (also when it already did), rejects with `QueueError`. */
  enqueue(task: TaskRequest): Promise<void>;
  /** How task requests from this queue are authenticated, if the queue knows. */
  authenticator?(): Authenticator;
  /** Optional set-up; the Locker does not call it, the queue's owner does. */
  init?(): Promise<void>;
  /** Optional clean-up (e.g. `LocalQueue` stops dispatching); the Locker does not call it, the queue's owner does. */
  shutdown?(): Promise<void>;
  /** How long the queue waits for a task's answer, ms, when it knows: the Locker checks it against `requestTimeout`. */
  readonly dispatchDeadlineMs?: number | undefined;
  /**
   * The path of the URL the queue appends task paths to (`/api` for `https://app.example.com/api`;
   * '' when it has none). `handle()` takes a task only on its step's path or on this path followed
   * by it: a queue whose target URL has a path of its own says so here. Defaults to ''.
   */
  readonly basePath?: string | undefined;
  /**
   * How many tasks wait in the queue and how many are being delivered, when the queue can tell
   * (`LocalQueue` can; Cloud Tasks' v2 API, which `CloudTasksQueue` uses, has no count): the status
   * page shows it beside the steps that wait. Optional.
   */
  depth?(): Promise<QueueDepth>;
}

/** What a queue holds now (`Queue.depth`). */
export interface QueueDepth {
  /** Tasks waiting for their time or their turn. */
  waiting: number;
  /** Tasks being delivered now. */
  inFlight: number;
}

/** Cloud Tasks' metadata about the delivery, from `X-CloudTasks-*` or `X-AppEngine-*` headers. */
export interface TaskInfo {
  /** Where the headers came from. */
  source: 'cloud-tasks' | 'app-engine' | 'none';
  /** The task's short name (the last segment of its full name). */
  name?: string;
  /** The queue's short name. */
  queue?: string;
  /** Times the task was retried (0 on the first attempt). */
  retryCount?: number;
  /** Times the task got a response (excludes attempts that got none). */
  executionCount?: number;
  /** The task's schedule time. */
  eta?: Date;
  /** The HTTP status of the previous attempt, if any. */
  previousResponse?: number;
  /** Why the task is retried, if it is. */
  retryReason?: string;
}

// ---------------------------------------------------------------------------------------------
// Alerts

/** Why a person is told. */
export const AlertReason = {
  /** A stale lease was overwritten: the step may have run twice. */
  overwrite: 'overwrite',
  /** A step failed for good: its chain stopped. */
  failure: 'failure',
} as const;
export type AlertReason = (typeof AlertReason)[keyof typeof AlertReason];

/** Everything an alert says. */
export interface AlertEvent {
  /**
   * The alert's stable id: the same event always has the same id, also when it is sent twice
   * (e.g. re-sent by the attempt that took over from one that died before sending it). Alerts are
   * sent at least once; use the id to recognise a repeat. `EmailAlerter` makes it the Message-ID.
   */
  id: string;
  /** Why the alert is sent. */
  reason: AlertReason;
  /** The entity's key. */
  key: Key;
  /** The entity's kind (the last element of its key path). */
  kind: string;
  /** The key's namespace; undefined in the default namespace. */
  namespace?: string;
  /** The key's path, e.g. `Order:42/Line:"a"`. */
  keyPath: string;
  /** The step's sequence number. */
  seq: number;
  /** Failed attempts of the step, after this event. */
  retries: number;
  /** The attempt that held the lease before (overwrite) or that failed (failure). */
  previousAttempt?: string;
  /** The attempt that took the lease over (overwrite). */
  newAttempt?: string;
  /** How long ago the lease was last written, in ms (overwrite). */
  leaseAgeMs?: number;
  /** The last error (failure). */
  error?: {
    /** The error's message. */
    message: string;
    /** Its stack, when it had one. */
    stack?: string;
  };
  /** The task that carried the step. */
  task: TaskInfo;
  /** The entity's own properties (lock fields left out). */
  properties: Properties;
  /** The Google Cloud project it came from, when known (the store's project id, or `GOOGLE_CLOUD_PROJECT`). */
  project?: string;
  /** The service and revision (Cloud Run) or version (App Engine) it came from, when known (the Locker's `service`). */
  service?: string;
  /** The key as `X-Lock-Key` encodes it: `locker.decodeKey(encodedKey)` gives it back, e.g. to `locker.retry()`. */
  encodedKey?: string;
  /** The step's page on the status router, when the Locker's `statusUrl` is configured. */
  stepUrl?: string;
  /** Alerts of this kind that a rate limit held back before this one (set by the alerter). */
  suppressed?: number;
  /** When the event happened, by the Locker's clock. */
  at: Date;
}

/** Anything that can tell a person: a function or an object with `send`. */
export type Alerter =
  | ((event: AlertEvent) => Promise<void> | void)
  | {
    /** Tells a person about `event`; a rejection is logged, never changes the task's answer. */
    send(event: AlertEvent): Promise<void>;
  };

// ---------------------------------------------------------------------------------------------
// Logging

/** Where the Locker logs; `console` fits. Fields are plain data. */
export interface Logger {
  /** The normal course of things: a task dropped as a duplicate, a sweep done, an alert sent. */
  info(message: string, fields?: Record<string, unknown>): void;
  /** Something went wrong that the Locker recovers from: a handler failed and will be retried, a request was refused, a stale lease was overwritten. */
  warn(message: string, fields?: Record<string, unknown>): void;
  /** Something failed that needs a look: a step failed for good, the store is unavailable, an alert could not be sent. */
  error(message: string, fields?: Record<string, unknown>): void;
}
