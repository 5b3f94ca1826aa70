/**
 * Taking the lease when a task arrives: one strongly consistent read decides (most duplicates end
 * there), then a compare-and-swap on the version read writes the lock `take`, `overwrite` or
 * `expire` makes. A task that does not run is answered here. The lease taker (`LeaseTaker`) is the
 * part that does it, built once with its settings and ports; it hands back the `Lease` it took.
 */
import type { SettingName, Settings } from '../config/settings';
import { ALERT_RULES, claimAlert } from '../rules/alert-markers';
import { unsentOverwriteAlerts } from '../alert/resend';
import { reportTakeover, startAlerts } from './takeover-report';
import { outcomes, type Outcome } from './outcome';
import type { Arrival } from './arrival';
import type { AlertSender } from '../alert/sender';
import type { Ledger } from '../chain/ledger';
import type { Emit } from '../events/emit';
import type { SeenSteps } from '../locks/seen-steps';
import type { Locks } from '../locks/locks';
import { decide, type Decision } from '../rules/decision';
import { keyPath } from '../keys/key-codec';
import { readLock, type Lock } from '../rules/lock-fields';
import type { LockRead, SwapStep } from '../locks/locks';
import { expire, overwrite, take as takeLease } from '../rules/transitions';
import { StepState, type LedgerRecord, type LedgerRef, type Properties, type Snapshot, type StepRead } from '../types';
import { taskName } from '../rules/ledger-record';
import { onStepRoute } from './task-route';
import { Lease, LEASE_SETTINGS } from './lease';

/** What taking a lease reads of the configuration: the clock, the logger, the lease's and Go's durations, the retries, the refusal's status, the alert rules. */
export const TAKE_SETTINGS = ['clock', 'logger', 'leaseDuration', 'goLeaseTimeout', 'maxRetries', 'lockFailedStatus', ...ALERT_RULES, ...LEASE_SETTINGS] as const satisfies readonly SettingName[];
export type TakeSettings = Settings<typeof TAKE_SETTINGS>;

/** What taking a lease uses: its settings (and those of the lease it takes), the lock part, the duplicate cache, the events port, the alert part, the ledger. */
export interface TakeParts {
  readonly config: TakeSettings;
  readonly locks: Locks;
  readonly seen: SeenSteps;
  readonly emit: Emit;
  readonly alerts: AlertSender;
  readonly ledger: Ledger;
  /** The path of the queue's target URL, which task paths are appended to ('' when it has none): a task's route is checked against it. */
  readonly basePath: () => string;
}

/** The part that takes leases as tasks arrive (see the file's comment); built once per Locker. */
export class LeaseTaker {
  constructor(private readonly parts: TakeParts) {}

  /**
   * Takes the lease for arrival `a` (see {@link take}): resolves to the `Lease` taken, which carries
   * the sends of the alerts it claimed, and the entity's properties as read; or to the answer of a
   * task that does not run.
   */
  async take(a: Arrival): Promise<{ answer: Outcome } | { lease: Lease; props: Properties }> {
    const taken = await take(this.parts, a);
    if ('answer' in taken) return taken;
    return { lease: new Lease(this.parts, a.key, a.seq, a.attempt, taken.snapshot, a.arrivedAt, undefined, taken.alerting, taken.record), props: taken.props };
  }
}

/**
 * Takes the lease, or outcomes. One strongly consistent read decides; most duplicates end there.
 * A lease is taken by a compare-and-swap on the version read: when another attempt wrote first,
 * the entity is read again and decided again (bounded, with backoff).
 */
export async function take(parts: TakeParts, a: Arrival): Promise<{ answer: Outcome } | Taken> {
  const { leaseDuration } = parts.config;
  const now = new Date(parts.config.clock());
  const known = a.resent ? undefined : parts.seen.recall(a.key, a.seq, a.chain, now.getTime());
  if (known) return { answer: answerFor(parts, a, known) };
  const first = await readStep(parts, a);
  if ('answer' in first) return first;
  let reads = 0;
  const taken = await parts.locks.swap(a.key, `attempt ${a.attempt} took its lease`, first.read, (current): SwapStep<Swapped> => {
    const readAt = reads++ === 0 ? now.getTime() : parts.config.clock();
    const decision = arrivalDecision(parts, a, current?.lock);
    if (!current || (decision.action !== 'acquire' && decision.action !== 'overwrite' && decision.action !== 'expire')) {
      // What was read is remembered for the next copies of this task; a write remembers what it wrote instead.
      parts.seen.observe(a.key, current?.snapshot.properties, readAt, leaseDuration);
      return { done: { decision } };
    }
    const next = takeover(parts, a, decision, current.lock, now);
    return { write: next.lock, then: (written, read) => ({ decision, written, read, alerts: next.alerts, lock: next.lock }) };
  });

  const d = taken.decision;
  if (!('written' in taken)) return { answer: answerFor(parts, a, d) };
  let alerting: Promise<string[]> | undefined;
  if (d.action === 'overwrite' || d.action === 'expire') {
    alerting = (await reportTakeover(parts, a, d, taken.read.snapshot.properties, taken.lock, taken.alerts !== undefined, now)).sending;
    if (d.action === 'expire') {
      // The step's ledger record stays (its path and payload) for locker.retry(); see stall.ts.
      return { answer: outcomes.expired(a.seq) };
    }
  } else {
    parts.emit('acquired', { key: a.key, seq: a.seq, attempt: a.attempt });
    // Overwrite alerts an earlier holder left unmarked: this attempt sends them too (none in the usual case: no work at all).
    if (taken.lock.alerts.length > 0) alerting = startAlerts(parts, unsentOverwriteAlerts(parts.config, a.key, taken.lock, taken.read.snapshot.properties, a.task, now));
  }
  return { snapshot: taken.written, props: taken.read.snapshot.properties, alerting, ...(first.record ? { record: first.record } : {}) };
}

/**
 * A lease taken: the entity as written, its properties as read, and the sends of the alerts this
 * attempt claimed or found owed (undefined in the usual case: none), which the lease carries.
 */
export interface Taken {
  snapshot: Snapshot;
  props: Properties;
  alerting: Promise<string[]> | undefined;
  /** The step's ledger record as the first read found it (its id and version), where the store read it. */
  record?: LedgerRef;
}

/** What the take's compare-and-swap came to: a decision with nothing written, or the lease taken. */
type Swapped = { decision: Decision } | { decision: Decision; written: Snapshot; read: LockRead; alerts: string[] | undefined; lock: Lock };

/**
 * The first read of an arrival: the entity, and (where the store reads both at once) the ledger
 * record of the step the task names. A task whose route or body is not its step's, as the record
 * has them, is answered 400 before anything is decided or written: a credential replayed with
 * another route or body runs nothing (docs/concepts/security.md). Every task this library sends
 * names its chain (`X-Lock-Chain`), so the record is read with the entity; a task that names none,
 * for a lock that has a chain, is checked all the same, against the record of the lock's step (a
 * second read, on a path only hand-made requests take). A request for the step the lock waits at
 * whose record is missing is answered 400 too: no task was issued for it (a fan-out's join before
 * its trigger). Only the Go library's locks (no chain, no record), and stores that cannot read the
 * record with the entity (`readsWithRecord` false), take tasks unchecked.
 */
async function readStep(parts: TakeParts, a: Arrival): Promise<{ answer: Outcome } | { read: LockRead | undefined; record?: LedgerRef }> {
  if (!parts.locks.readsWithRecord) return { read: await parts.locks.read(a.key) };
  if (a.chain !== undefined) {
    const step = await parts.locks.readWithRecord(a.key, taskName(a.key, a.chain, a.seq));
    return checked(parts, a, step.snapshot && { snapshot: step.snapshot, lock: readLock(step.snapshot.properties) }, step, a.chain);
  }
  const read = await parts.locks.read(a.key);
  const lock = read?.lock;
  if (!lock?.chain || !lock.task || lock.seq !== a.seq) return { read };
  return checked(parts, a, read, await parts.locks.readWithRecord(a.key, lock.task), lock.chain);
}

/**
 * The arrival checked against its step's record: refused (400) when the route or body differ; else
 * the entity as read, and the record's id and version (the step's finish removes it at that version).
 */
function checked(parts: TakeParts, a: Arrival, read: LockRead | undefined, step: StepRead, chain: string): { answer: Outcome } | { read: LockRead | undefined; record?: LedgerRef } {
  const { record } = step;
  if (!record && unissued(read?.lock, a.seq, chain)) {
    // The step the lock waits at has no record, so no task was issued for it yet (a fan-out's join
    // before its trigger wrote it): whatever names it was not sent by this library.
    parts.config.logger.warn('task request refused: its step has no ledger record, so no task was issued for it', {
      key: keyPath(a.key), seq: a.seq, path: a.request.path,
    });
    return { answer: outcomes.badRequest(`step ${a.seq} has no ledger record: no task was issued for it yet`) };
  }
  const mismatch = record && record.seq === a.seq && record.chain === chain ? stepMismatch(parts, record, a) : undefined;
  if (!mismatch) return { read, ...(record && step.recordVersion !== undefined ? { record: { key: a.key, id: record.id, version: step.recordVersion } } : {}) };
  parts.config.logger.warn('task request refused: it does not match its step', {
    key: keyPath(a.key), seq: a.seq, path: a.request.path, stepPath: record!.path, mismatch,
  });
  return { answer: outcomes.badRequest(`the request's ${mismatch} is not its step's`) };
}

/**
 * Whether `lock` waits at step `seq` of `chain`, scheduled, so that a missing ledger record means no
 * task was ever issued for the step: every step this library schedules is committed with its
 * record, except a fan-out's join, whose record its trigger writes (docs/design.md, section 18). A
 * step that ended, or another chain's, is left to the decision (a duplicate is dropped, 200).
 */
function unissued(lock: Lock | undefined, seq: number, chain: string): boolean {
  return lock !== undefined && lock.chain === chain && lock.seq === seq && lock.state === StepState.scheduled;
}

/**
 * What of an arrival differs from its step's ledger record: the route (the request's path, its query
 * aside, must be the step's, or the queue's base path followed by it; its query the step's: see
 * `task-route.ts`) or the body (the payload as JSON must be the body the step was scheduled with).
 */
function stepMismatch(parts: Pick<TakeParts, 'basePath'>, record: LedgerRecord, a: Arrival): 'route' | 'body' | undefined {
  if (!onStepRoute(a.request.originalUrl ?? a.request.url, record.path, parts.basePath())) return 'route';
  const body = a.payload === undefined ? '' : JSON.stringify(a.payload);
  return body === record.body ? undefined : 'body';
}

/** The lock an arriving attempt writes when it takes the lease (or fails a step whose leases kept expiring). */
function takeover(parts: TakeParts, a: Arrival, d: Decision, lock: Lock, now: Date): { lock: Lock; alerts: string[] | undefined } {
  if (d.action === 'overwrite') {
    const alerts = claimAlert(parts.config, lock, { previous: d.previous, next: a.attempt });
    return { lock: overwrite(lock, { now, attempt: a.attempt, alerts, route: routeOf(a) }), alerts };
  }
  if (d.action === 'expire') {
    const alerts = claimAlert(parts.config, lock, { failed: d.previous });
    const error = `lease of attempt ${d.previous} expired ${lock.tries + 1} time(s); no attempt finished the step`;
    return { lock: expire(lock, { now, error, alerts }), alerts };
  }
  return { lock: takeLease(lock, { now, attempt: a.attempt, route: routeOf(a) }), alerts: undefined };
}

/** The route the chain's history keeps for the step: the request's path, its query left out (it may carry what the history must not). */
function routeOf(a: Arrival): string {
  const path: unknown = a.request?.path;
  return typeof path === 'string' ? path : '';
}

function arrivalDecision(parts: TakeParts, a: Arrival, lock: Lock | undefined): Decision {
  return decide({
    lock,
    seq: a.seq,
    chain: a.chain,
    attempt: a.attempt,
    now: parts.config.clock(),
    leaseDurationMs: parts.config.leaseDuration,
    goLeaseTimeoutMs: parts.config.goLeaseTimeout,
    maxRetries: parts.config.maxRetries,
  });
}

/** The answer to a task that does not run. */
function answerFor(parts: TakeParts, a: Arrival, d: Decision): Outcome {
  if (d.action === 'refuse') {
    parts.emit('refused', { key: a.key, seq: a.seq, attempt: a.attempt, holder: d.holder, retryAfterMs: d.retryAfterMs });
    const retryAfter = Math.max(1, Math.ceil(Math.min(d.retryAfterMs, parts.config.leaseDuration) / 1000));
    return outcomes.refused(a.seq, parts.config.lockFailedStatus, retryAfter);
  }
  if (d.action === 'drop') {
    parts.emit('dropped', { key: a.key, seq: a.seq, attempt: a.attempt, reason: d.reason });
    parts.config.logger.info('task dropped', { key: keyPath(a.key), seq: a.seq, reason: d.reason });
    return outcomes.dropped(DROP_MESSAGES[d.reason]);
  }
  throw new Error(`no answer for decision ${d.action}`);
}

const DROP_MESSAGES = {
  missing: 'the entity does not exist',
  finished: 'a duplicate of a finished step',
  unscheduled: 'no such step is scheduled',
  'other-chain': 'the task belongs to an earlier chain',
  failed: 'the step failed for good',
  cancelled: 'the chain was cancelled',
} as const;
