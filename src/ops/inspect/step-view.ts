/**
 * What an operator sees of one step: its state as the operator's view names it (scheduled,
 * running, stale lease, stalled, failed, complete), computed from the stored lock fields and the
 * clock, never stored. Pure: the same lock and clock give the same view.
 */
import type { Key } from '@google-cloud/datastore';
import { keyPath } from '../../keys/key-codec';
import { readLock, userProperties, type Lock } from '../../rules/lock-fields';
import { carriedFailures, unsentFailure, unsentOverwrites } from '../../rules/alert-markers';
import { StepState, type LedgerRecord, type Properties } from '../../types';
import { scrub } from '../../alert/redact';

/** The states the operator's view lists steps by. */
export const InspectState = {
  /** Waiting for its task: the lease is free and the step has not been waiting for `stallAfter`. */
  scheduled: 'scheduled',
  /** An attempt holds a fresh lease (renewed within `leaseDuration`). */
  running: 'running',
  /** An attempt holds a lease it stopped renewing: it crashed or hangs; the next delivery takes it over. */
  stale: 'stale',
  /** No progress for `stallAfter`: a free lease nobody took, or a stale lease nobody took over. */
  stalled: 'stalled',
  /** Failed for good: its chain stopped until someone retries or cancels it. */
  failed: 'failed',
  /** The chain finished. */
  complete: 'complete',
  /** An operator cancelled the chain at this step. */
  cancelled: 'cancelled',
} as const;
export type InspectState = (typeof InspectState)[keyof typeof InspectState];

/** Every state, in the order a page shows them. */
export const INSPECT_STATES: readonly InspectState[] = ['stalled', 'stale', 'failed', 'running', 'scheduled', 'complete', 'cancelled'];

/** The clock and durations a view is computed with. */
export interface ViewClock {
  now: number;
  leaseDuration: number;
  stallAfter: number;
}

/** One step as the operator's view shows it. */
export interface StepSummary<K = Key> {
  /** The entity's key: a `DocumentReference` on a `FirestoreStore`. */
  key: K;
  /** The key as `X-Lock-Key` encodes it; the status router's links and forms carry it. */
  encodedKey: string;
  /** The entity's kind. */
  kind: string;
  /** The key's namespace; undefined in the default namespace. */
  namespace?: string;
  /** The key as the store's users write it: `Order:42/Line:"a"`; a document's path (`Order/#42/Line/a`) on a `FirestoreStore`. */
  keyPath: string;
  /** Undefined for an entity no step was ever scheduled on. */
  state: InspectState | undefined;
  /** The current step's sequence number. */
  seq: number;
  /** The chain the current step belongs to; undefined when none is stored (entities the Go library wrote). */
  chain?: string;
  /**
   * The tracked work that started the chain (`lock_run`): `k:<kickoff id>` for a bulk kickoff,
   * `f:<fan-out id>` for a fan-out's child; undefined for a chain `schedule()` started.
   */
  run?: string;
  /** Failed attempts of the current step. */
  tries: number;
  /** The attempt holding the lease, if any. */
  holder?: string;
  /** How long ago the lease was last taken or renewed, ms (while held). */
  leaseAgeMs?: number;
  /** When the lock fields were last written: the step's last progress. */
  lastProgressAt?: Date;
  /** How long ago that was, ms. */
  lastProgressAgeMs?: number;
  /** An attempt holds a lease it stopped renewing. */
  staleLease: boolean;
  /** No progress for `stallAfter` while scheduled. */
  stalled: boolean;
  /** The name of the task that carries the step. */
  task?: string;
  /** The last error's first line. */
  errorMessage?: string;
  /**
   * Alerts claimed on the entity and not yet marked sent (overwrites, and failures of this step or
   * carried from an earlier one): the sweep sends them, or whoever takes the lease next.
   */
  alertsOwed: number;
  /** The entity's own properties (lock fields left out). */
  properties: Properties;
  /**
   * A step waiting for its task, as its ledger record tells (lists read the records of their
   * scheduled steps): the tasks sent so far and when the last was. A step whose last send the sweep
   * is not due to look at yet is queued, not stalled, however old its last progress.
   */
  queued?: QueuedTask;
}

/** What a waiting step's ledger record says of its task. */
export interface QueuedTask {
  /** Tasks sent for the step so far, the first included. */
  sends: number;
  /** When the last was sent. */
  sentAt: Date;
  /** How long ago that was, ms. */
  sentAgeMs: number;
  /** When the sweep looks at the step again (re-sends its task if it has not run by then). */
  due: Date;
}

/**
 * The view of an entity's stored properties at `clock.now`. `secrets` (the values `redact` takes
 * out) are scrubbed from the error before its first line is cut: a cut never leaves part of one.
 */
export function viewStep(key: Key, props: Properties, clock: ViewClock, encodedKey: string, secrets: readonly string[] = []): StepSummary {
  const lock = readLock(props);
  const ageMs = lock.ts ? Math.max(0, clock.now - lock.ts.getTime()) : undefined;
  const scheduled = lock.state === StepState.scheduled;
  const staleLease = scheduled && lock.req !== '' && (ageMs === undefined || ageMs >= clock.leaseDuration);
  const stalled = scheduled && (lock.req === '' || staleLease) && (ageMs === undefined || ageMs >= clock.stallAfter);
  const view: StepSummary = {
    key, encodedKey, kind: key.kind, keyPath: keyPath(key),
    state: stateOf(lock.state, lock.req !== '', staleLease, stalled),
    seq: lock.seq, tries: lock.tries, staleLease, stalled, alertsOwed: alertsOwed(lock),
    properties: userProperties(props),
  };
  if (key.namespace) view.namespace = key.namespace;
  if (lock.chain) view.chain = lock.chain;
  if (lock.run) view.run = lock.run;
  if (lock.req) view.holder = lock.req;
  if (lock.req && ageMs !== undefined) view.leaseAgeMs = ageMs;
  if (lock.ts) view.lastProgressAt = lock.ts;
  if (ageMs !== undefined) view.lastProgressAgeMs = ageMs;
  if (lock.task) view.task = lock.task;
  if (lock.err) view.errorMessage = firstLine(scrub(lock.err, secrets));
  return view;
}

/** The claims on the lock still unmarked (see `StepSummary.alertsOwed`). */
function alertsOwed(lock: Lock): number {
  if (lock.alerts.length === 0) return 0;
  const failure = lock.state === StepState.failed && unsentFailure(lock) !== undefined ? 1 : 0;
  return unsentOverwrites(lock).length + carriedFailures(lock).length + failure;
}

function stateOf(state: StepState | undefined, held: boolean, staleLease: boolean, stalled: boolean): InspectState | undefined {
  if (state === StepState.failed) return InspectState.failed;
  if (state === StepState.complete) return InspectState.complete;
  if (state === StepState.cancelled) return InspectState.cancelled;
  if (state !== StepState.scheduled) return undefined;
  if (stalled) return InspectState.stalled;
  if (staleLease) return InspectState.stale;
  return held ? InspectState.running : InspectState.scheduled;
}

/**
 * The view of a waiting step refined by its ledger record (the record of its current step, or
 * undefined): its task's sends, and a step whose last task was sent less than `stallAfter` ago
 * (the sweep's threshold: it re-sends a task only that long after the last) counts as queued, not
 * stalled, however old its last progress: a backlog, not a loss.
 */
export function withLedger(view: StepSummary, record: Pick<LedgerRecord, 'seq' | 'sends' | 'sentAt' | 'due' | 'id'> | undefined, clock: ViewClock): StepSummary {
  if (!record || view.state === undefined || record.seq !== view.seq || record.id !== view.task) return view;
  if (view.state !== InspectState.scheduled && view.state !== InspectState.stalled && view.state !== InspectState.stale && view.state !== InspectState.running) return view;
  const sentAgeMs = Math.max(0, clock.now - record.sentAt.getTime());
  const queued: QueuedTask = { sends: record.sends, sentAt: record.sentAt, sentAgeMs, due: record.due };
  if (!view.stalled || sentAgeMs >= clock.stallAfter) return { ...view, queued };
  return { ...view, queued, stalled: false, state: view.staleLease ? InspectState.stale : InspectState.scheduled };
}

/** Whether a view belongs in a list of `state` (a stalled stale lease is in both lists). */
export function inList(view: StepSummary, state: InspectState): boolean {
  if (state === InspectState.stale) return view.staleLease;
  if (state === InspectState.stalled) return view.stalled;
  return view.state === state;
}

/** The longest error line a list shows, with its `…` when cut. */
export const ERROR_LINE_MAX = 300;

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > ERROR_LINE_MAX ? `${line.slice(0, ERROR_LINE_MAX - 1)}…` : line;
}

/** Splits a stored error (`lock_err`: the stack, or name and message) into its message and stack. */
export function splitError(text: string): { message: string; stack?: string } {
  const lines = text.split('\n');
  const frame = lines.findIndex((line) => /^\s+at /.test(line));
  if (frame <= 0) return { message: text };
  return { message: lines.slice(0, frame).join('\n'), stack: text };
}
