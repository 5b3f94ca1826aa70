/**
 * How an attempt ends, in one place: a part built once per Locker with the narrow things an end
 * uses (its settings, and the lock part, events, alerts, ledger, dispatcher, fan-out part and
 * telemetry), so no end is handed the whole of the parts; each end is told the arrival and its
 * lease. A step ends by its last write under the lease: finished (`complete`, or `finish` when the
 * handler returned), its next step scheduled (`schedule`), or sealed after fanning out (`seal`).
 * An attempt that does not finish its step fails (`fail`: released for a retry or failed for
 * good), hands its lease back (`handBack`), or has lost it (`lost`).
 */
import type { SettingName, Settings } from '../config/settings';
import type { Arrival } from './arrival';
import { FAIL_SETTINGS, failAttempt } from './fail';
import { completeStep } from './finish';
import type { Lease } from './lease';
import type { HandBackWhy } from './end-decision';
import { outcomes, type Outcome } from './outcome';
import { entityProperties, type ScheduleOptions, type ScheduledStep } from './handler-types';
import type { AlertSender } from '../alert/sender';
import type { Dispatcher } from '../chain/dispatcher';
import type { Ledger } from '../chain/ledger';
import type { Emit } from '../events/emit';
import type { FanOuts } from '../fanout/fan-outs';
import type { Locks } from '../locks/locks';
import type { Telemetry } from '../telemetry/telemetry';
import { CHAIN_SETTINGS, checkStep, commitNextStep, sendNextStep } from '../chain/next-step';
import { LeaseLostError, PermanentError, ShutdownError } from '../errors/errors';
import { sealedBy } from '../fanout/seal';
import type { Header } from '../fanout/records';
import { keyPath } from '../keys/key-codec';
import { newChainId, type NextStep } from '../rules/ledger-record';
import { describeError, sameLock, type Lock } from '../rules/lock-fields';
import type { Json, LedgerRecord, Properties } from '../types';

/** What an attempt's end reads of the configuration: the failure settings and the chain settings. */
export const END_SETTINGS = [...FAIL_SETTINGS, ...CHAIN_SETTINGS] as const satisfies readonly SettingName[];
export type EndSettings = Settings<typeof END_SETTINGS>;

/** The parts an attempt's end writes and reports through, with its settings (not the whole configuration). */
export interface EndParts {
  readonly config: EndSettings;
  readonly locks: Locks;
  readonly emit: Emit;
  readonly alerts: AlertSender;
  readonly ledger: Ledger;
  readonly dispatcher: Dispatcher;
  readonly fanouts: FanOuts;
  readonly telemetry: Telemetry;
}

/** How attempts end (see the file's comment); built once per Locker. */
export class AttemptEnds {
  constructor(private readonly parts: EndParts) {}

  /**
   * Marks the step complete and saves the entity (`ctx.complete()`, and the end `finish` when the
   * handler returned without scheduling or completing); see `finish.ts`. A transient store failure
   * is retried under the lease (`Lease.settle`); what it throws then is decided by
   * `decideAfterFinish()` (`end-decision.ts`).
   */
  complete(a: Arrival, lease: Lease, entity: unknown): Promise<void> {
    return completeStep(this.parts, a, lease, entity);
  }

  /** Checks what the handler asked to schedule (`ctx.schedule()`); throws a `TypeError`/`RangeError` saying what is wrong. */
  nextStep(path: string, payload: Json | undefined, options?: ScheduleOptions): NextStep {
    return checkStep(this.parts, path, payload, options);
  }

  /**
   * Commits the next step `next` with the user's `own` properties, fenced and settled under the
   * lease (the step's last write; `commitNextStep`). Resolves to the next step's ledger record,
   * which `scheduled` reports and sends.
   */
  async schedule(a: Arrival, lease: Lease, own: Properties, next: NextStep): Promise<LedgerRecord> {
    const alertsSent = await lease.sentAlerts(); // an overwrite's alerts, sent while the handler ran (none in the usual case)
    const now = new Date(this.parts.config.clock());
    let planned: { lock: Lock; record: LedgerRecord } | undefined;
    return this.parts.telemetry.span('finish', a, () => lease.settle('schedule', () => lease.fenced((tx, props, lock) => {
      const chain = lock.chain ?? newChainId(); // entities the Go library wrote have no chain yet
      planned = commitNextStep(this.parts, tx, a.key, props, lock, { chain, step: next, how: 'schedule', own, sent: alertsSent }, now);
      return planned.record;
    }, (lock) => (planned && sameLock(lock, planned.lock) ? planned.record : undefined))));
  }

  /** After `schedule`'s commit: reports the step completed and the next scheduled, and creates its task (a failure is left to the sweep). */
  scheduled(a: Arrival, record: LedgerRecord): Promise<ScheduledStep> {
    this.parts.emit('completed', { key: a.key, seq: a.seq, attempt: a.attempt, next: record.seq });
    return sendNextStep(this.parts, record, a.attempt);
  }

  /**
   * The last write of a step that fanned out (`ctx.fanOut()`, once every child was started): the
   * seal, fenced and settled under the lease; `movedOn` is told the join's step before the step is
   * reported completed.
   */
  async seal(a: Arrival, lease: Lease, entity: unknown, header: Header, movedOn: (next: number) => void): Promise<void> {
    const own = entityProperties(entity);
    const alertsSent = await lease.sentAlerts();
    const now = new Date(this.parts.config.clock());
    await this.parts.telemetry.span('finish', a, () => lease.settle('fan out', () => lease.fenced(
      (tx, props, lock) => this.parts.fanouts.seal(tx, a.key, props, lock, header, own, alertsSent, now),
      (lock) => (sealedBy(lock, header) ? Promise.resolve(lock) : undefined),
    )));
    movedOn(header.seq + 1);
    this.parts.emit('completed', { key: a.key, seq: a.seq, attempt: a.attempt, next: header.seq + 1 });
  }

  /** The handler threw (or the store refused the step's changes): released for a retry, or failed for good; see `fail.ts`. */
  fail(a: Arrival, lease: Lease, error: unknown): Promise<Outcome> {
    return failAttempt(this.parts, a, lease, error);
  }

  /**
   * The error a step fails for good with when the handler ran but the store refused its result for
   * good: a `PermanentError` that says so, with the store's refusal as its cause. Logged.
   */
  unstorable(a: Arrival, error: unknown): PermanentError {
    const why = error instanceof Error ? error.message : String(error);
    this.parts.config.logger.error('the handler ran, but its result cannot be stored; the step fails for good (alerted) rather than run again', {
      key: keyPath(a.key), seq: a.seq, attempt: a.attempt, error: why,
    });
    return new PermanentError(`the handler ran, but its result could not be stored, so the step failed for good instead of running again: ${why}`, { cause: error });
  }

  /**
   * Hands the lease of a stopped attempt back (see `Lease.handBack`) and answers 503 so Cloud Tasks
   * delivers the task again: silently when the handler said it stopped before its effect (it
   * rejected with the signal's reason itself, or called `ctx.handBack()`) or never ran; written
   * stale (the next delivery's overwrite counts and alerts, naming this attempt) when it ran on,
   * rejected with any other error (`rejected`), which may have come after its effect, or the store
   * failed while `ctx.fanOut()` added children (the handler's code before it ran; the next
   * delivery resumes the fan-out).
   */
  async handBack(a: Arrival, lease: Lease, ranOn: boolean, why: HandBackWhy, rejected?: unknown): Promise<Outcome> {
    const { parts } = this;
    const reason = why === 'store-unavailable' ? why : why instanceof ShutdownError ? 'shutdown' : 'time-limit';
    const fields = { key: keyPath(a.key), seq: a.seq, attempt: a.attempt, reason };
    try {
      await lease.handBack(ranOn);
    } catch (error) {
      if (error instanceof LeaseLostError) return this.lost(a, error);
      throw error;
    }
    if (reason === 'store-unavailable') {
      parts.config.logger.warn('the store failed while the step added fan-out children; its lease is written stale, so the next delivery takes it over with an alert (the handler ran up to fanOut()) and resumes the fan-out', fields);
    } else if (rejected !== undefined) {
      parts.config.logger.error('handler rejected after it was stopped with an error other than the signal\'s reason, so its effect may have happened; its lease is written stale, so the next delivery takes it over with an alert', { ...fields, error: describeError(rejected) });
    } else if (ranOn) parts.config.logger.error('handler still running after it was stopped; its lease is written stale, so the next delivery takes it over with an alert', fields);
    else parts.config.logger.warn('lease handed back; the next delivery runs the step', fields);
    parts.emit('handedBack', { key: a.key, seq: a.seq, attempt: a.attempt, reason, silent: !ranOn });
    return outcomes.handedBack(a.seq, reason);
  }

  /** The attempt lost its lease: nothing it did after that was saved (logged). */
  lost(a: Arrival, error: LeaseLostError): Outcome {
    return lostLease(this.parts.config, a, error);
  }
}

/** The answer to an attempt that lost its lease, logged: nothing it did after that was saved. */
export function lostLease(settings: Pick<EndSettings, 'logger'>, a: Arrival, error: LeaseLostError): Outcome {
  settings.logger.warn('attempt lost its lease; nothing it did after that was saved', { key: keyPath(a.key), seq: a.seq, attempt: a.attempt, error: error.message });
  return outcomes.leaseLost();
}
