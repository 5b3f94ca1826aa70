/**
 * A lease is a value with a life cycle: taken by an attempt, renewed every `leaseDuration / 3`
 * while the handler runs, lost when another attempt overwrites it or when no renewal succeeded
 * for `leaseDuration` minus a safety margin (then it can no longer be proven held), timed out at
 * `leaseTimeout`, and closed when the attempt ends. Every write made on the attempt's behalf is
 * fenced: it proceeds only while the attempt still holds the lease. Single-entity writes
 * (`update`) are compare-and-swaps on the last version this attempt wrote, one round trip each;
 * writes that add an ledger record go through a transaction (`fenced`). A step's last write goes
 * through `settle`, which retries transient failures under the live lease.
 */
import type { SettingName, Settings } from '../config/settings';
import type { Key } from '@google-cloud/datastore';
import type { Emit } from '../events/emit';
import type { Locks } from '../locks/locks';
import { holds } from '../rules/decision';
import { NO_ALERTS } from '../rules/alert-markers';
import type { Interruptible } from './drain';
import { LeaseLostError, LeaseTimeoutError, RequestTimeoutError, ShutdownError } from '../errors/errors';
import { classify, FaultClass } from '../errors/faults';
import { keyPath } from '../keys/key-codec';
import { readLock, type Lock } from '../rules/lock-fields';
import type { SwapStep } from '../locks/locks';
import { abandon, handBack, renew as renewLease } from '../rules/transitions';
import type { LedgerRef, Properties, Snapshot, StoreTransaction } from '../types';
import { realTimers, type Timer, type Timers } from '../config/timers';

/** What sentAlerts() hands back when the attempt sent none. */
const NO_SENDS: Promise<readonly string[]> = Promise.resolve(NO_ALERTS);

/** What pause() hands back when no renewal is in flight. */
const SETTLED: Promise<void> = Promise.resolve();

/** What a lease's writes may recognise as their own, already applied (the answer to it was lost). */
export type Recognise<T> = (lock: Lock) => T | undefined;

/** The longest a step's last write is retried on transient failures: half a lease, ms. */
export function settleBudget(leaseDuration: number): number {
  return Math.floor(leaseDuration / 2);
}

/** How long a lease may go without a successful renewal before it is given up: the lease minus a sixth, ms. */
export function proofWindow(leaseDuration: number): number {
  return leaseDuration - Math.ceil(leaseDuration / 6);
}

/** What a lease reads of the configuration: the clock, the logger, the lease's durations, the request's time limit and the stop's grace. */
export const LEASE_SETTINGS = ['clock', 'logger', 'leaseDuration', 'leaseTimeout', 'requestTimeout', 'stepLimit', 'stepGrace'] as const satisfies readonly SettingName[];
export type LeaseSettings = Settings<typeof LEASE_SETTINGS>;

/** What a lease is built with: its settings, the lock part it writes through, the events port. */
export interface LeaseParts {
  readonly config: LeaseSettings;
  readonly locks: Locks;
  readonly emit: Emit;
}

/** Why an attempt is stopped for a hand-back: the Locker shuts down, or the request nears its time limit. */
export type Interruption = ShutdownError | RequestTimeoutError;

export class Lease implements Interruptible {
  /** Made when the signal is first asked for (most handlers never do): an AbortController costs microseconds. */
  private controller: AbortController | undefined;
  /** Why the lease ended early, once it did (`lose`). */
  private abortReason: LeaseLostError | LeaseTimeoutError | undefined;
  /** Why the attempt is being stopped for a hand-back, once it is (`interrupt`). */
  private interruption: Interruption | undefined;
  /** Set once the lease is given up while the handler may still run: no write of the attempt goes through after. */
  private givenUp = false;
  /** Called when a stopped handler is still running at the end of its grace (set by `race`). */
  private ranOn: (() => void) | undefined;
  private graceTimer: Timer | undefined;
  private renewTimer: Timer | undefined;
  private timeoutTimer: Timer | undefined;
  private proofTimer: Timer | undefined;
  private renewing: Promise<void> | undefined;
  private renewals = false;
  private closed = false;
  private startedAt = 0;
  /** When the next renewal is due (`timers.now()` ms): a pause delays it, never restarts its cadence. */
  private renewDueAt = 0;

  constructor(
    private readonly parts: LeaseParts,
    readonly key: Key,
    readonly seq: number,
    readonly attempt: string,
    /** The entity as this attempt last wrote it (the version its next write expects). */
    private snapshot: Snapshot,
    /** When the request arrived (`timers.now()` ms): the step's time limit counts from it. Defaults to when the lease starts. */
    private arrivedAt?: number,
    /** The clock and timers of renewal, the proof window, the time limits and the grace (a test hands its own). */
    private readonly timers: Timers = realTimers,
    /** The sends of the alerts the attempt claimed when it took the lease (an overwrite's), resolving to the markers the alerter took. */
    private readonly alerting?: Promise<string[]>,
    /** The step's ledger record as the take read it (id and version), where the store read it: the step's finish removes it at that version. */
    readonly record?: LedgerRef,
  ) {}

  /**
   * The markers of the alerts this attempt started sending when it took the lease that the alerter
   * took (the step's last write marks them sent): none in the usual case; else once they settle,
   * within `alertTimeout`.
   */
  sentAlerts(): Promise<readonly string[]> {
    return this.alerting ?? NO_SENDS;
  }

  /**
   * Aborts with `LeaseLostError` when the lease is lost (overwritten, or no renewal succeeded for
   * too long), with `LeaseTimeoutError` when the attempt runs past `leaseTimeout`, with
   * `RequestTimeoutError` when it nears `requestTimeout`, and with `ShutdownError` when
   * `locker.shutdown()` ran out of time.
   */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      const reason = this.abortReason ?? this.interruption;
      if (reason) this.controller.abort(reason);
    }
    return this.controller.signal;
  }

  /** Why the attempt was stopped for a hand-back, if it was (a method: it changes while the handler runs). */
  interrupted(): Interruption | undefined {
    return this.interruption;
  }

  /**
   * Stops the handler for a hand-back: aborts the signal with a `ShutdownError` (`kind` shutdown)
   * or a `RequestTimeoutError` (time-limit). A handler still running `graceMs` later is given up
   * (`race` resolves true). Renewal goes on meanwhile: the handler may still finish and store its step.
   */
  interrupt(kind: 'shutdown' | 'time-limit', graceMs: number): void {
    if (this.interruption || this.closed) return;
    const where = `attempt ${this.attempt} on ${keyPath(this.key)} step ${this.seq}`;
    this.interruption = kind === 'shutdown'
      ? new ShutdownError(`${where} was stopped: the Locker is shutting down`)
      : new RequestTimeoutError(`${where} was stopped: it neared requestTimeout (${this.parts.config.requestTimeout} ms)`);
    if (!this.abortReason) this.controller?.abort(this.interruption);
    this.parts.config.logger.warn(kind === 'shutdown' ? 'handler stopped: shutting down' : 'handler stopped: it neared the request timeout', {
      key: keyPath(this.key), seq: this.seq, attempt: this.attempt, graceMs,
    });
    this.graceTimer = this.timers.setTimeout(() => this.ranOn?.(), graceMs);
    this.graceTimer.unref();
  }

  /**
   * Waits for the handler's run: resolves false once it settles (rejects with what it threw), or
   * true when it was stopped (`interrupt`) and is still running at the end of its grace.
   */
  race(run: Promise<unknown>): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.ranOn = () => resolve(true);
      run.then(() => resolve(false), reject);
    });
  }

  /**
   * Hands the lease back after a stop: silently (`handBack`: free at once, no failed attempt
   * counted) when the handler stopped on the signal, or, when it may still run (`ranOn`), written
   * as already stale (`abandon`) so the next delivery overwrites it at once, counted and alerted,
   * and no later write of this attempt goes through. Throws `LeaseLostError` when the lease was no
   * longer held.
   */
  async handBack(ranOn: boolean): Promise<void> {
    if (ranOn) this.givenUp = true;
    await this.pause();
    const now = new Date(this.parts.config.clock());
    const { leaseDuration } = this.parts.config;
    let intended: Lock | undefined;
    await this.settle(ranOn ? 'abandon' : 'hand back', () => this.write((lock) => {
      intended = ranOn ? abandon(lock, { now, leaseDuration }) : handBack(lock, { now });
      return intended;
    }, (lock) => (intended && lock.req === intended.req && lock.ts?.getTime() === intended.ts?.getTime() && lock.seq === this.seq ? true : undefined), true));
  }

  /** The reason the lease was lost, once it was: every later write is refused with it. */
  get lost(): LeaseLostError | undefined {
    return this.abortReason instanceof LeaseLostError ? this.abortReason : undefined;
  }

  /** Starts renewing, the `leaseTimeout` clock, and the clock of the last proof that the lease is held. */
  start(): void {
    this.startedAt = this.timers.now();
    this.arrivedAt ??= this.startedAt;
    this.renewDueAt = this.startedAt + this.renewEvery();
    this.proven();
    this.resume();
  }

  /** Stops renewing and waits for a renewal in flight, so nothing races the write that follows. */
  pause(): Promise<void> {
    this.renewals = false;
    this.timers.clearTimeout(this.renewTimer);
    this.timers.clearTimeout(this.timeoutTimer);
    return this.renewing ?? SETTLED;
  }

  /** Renewal and the `leaseTimeout` clock back on, after a pause (unless the lease is closed or aborted). */
  resume(): void {
    if (this.closed || this.abortReason || this.givenUp || this.renewals) return;
    this.renewals = true;
    this.scheduleRenewal();
    // One timer for both limits: the request's time limit (counted from the request's arrival, as the
    // platform counts it) when it comes first, else leaseTimeout (counted from the lease's start).
    const { leaseTimeout, stepLimit } = this.parts.config;
    const now = this.timers.now();
    const byRequestAt = (this.arrivedAt ?? this.startedAt) + stepLimit;
    const byLeaseAt = this.startedAt + leaseTimeout;
    const byRequest = byRequestAt < byLeaseAt;
    const left = Math.max(0, (byRequest ? byRequestAt : byLeaseAt) - now);
    this.timeoutTimer = this.timers.setTimeout(() => (byRequest ? this.interrupt('time-limit', this.parts.config.stepGrace) : this.lose('timeout')), left);
    this.timeoutTimer.unref();
  }

  /** Ends the lease's life: no more renewals, no timers; waits for a renewal in flight. */
  close(): Promise<void> {
    this.closed = true;
    this.timers.clearTimeout(this.proofTimer);
    this.timers.clearTimeout(this.graceTimer);
    return this.pause();
  }

  /**
   * A step's last write (finish, schedule, release, fail), under the live lease: a transient
   * failure is retried with backoff, renewal running meanwhile, for at most `settleBudget`; then,
   * or on any other failure, the error is thrown with renewal back on. Each try is `write`;
   * pass it a `recognise` so that a try finding an earlier one applied resolves.
   */
  async settle<T>(what: string, write: () => Promise<T>): Promise<T> {
    const started = this.timers.now();
    // Half a lease, and never past the request's own cut: the last half of the stop's grace is left for the answer.
    const { requestTimeout, stepGrace } = this.parts.config;
    const cut = (this.arrivedAt ?? started) + requestTimeout - Math.ceil(stepGrace / 2);
    const budget = Math.min(settleBudget(this.parts.config.leaseDuration), Math.max(0, cut - started));
    for (let delay = 20; ; delay = Math.min(delay * 2, 1_000)) {
      await this.pause();
      try {
        return await write();
      } catch (error) {
        const retry = classify(error) === FaultClass.transient && !this.lost && this.timers.now() - started + delay <= budget;
        this.resume();
        if (!retry) throw error;
        this.parts.config.logger.warn(`${what}: the store failed; retrying under the live lease`, {
          key: keyPath(this.key), seq: this.seq, attempt: this.attempt, retryInMs: delay, error: String(error),
        });
        await new Promise<void>((resolve) => this.timers.setTimeout(resolve, delay));
      }
    }
  }

  /**
   * Replaces the entity with `change(props, lock)` only while this attempt holds the lease on step
   * `seq`; otherwise throws `LeaseLostError` and writes nothing. A compare-and-swap on the version
   * this attempt last wrote: when something else wrote the entity since, it is read again and
   * the check and change are made on what is there now (bounded, with backoff). When what is
   * there is this attempt's own earlier write (`recognise`), it resolves without writing. `change`
   * applies a transition to the lock read (and is shown the stored properties); `entity`, the
   * user's own properties, is written over the stored ones.
   */
  update(change: (lock: Lock, props: Properties) => Lock, recognise?: Recognise<true>, entity?: Properties): Promise<void> {
    if (this.givenUp) return Promise.reject(this.lostError());
    return this.write(change, recognise, false, entity);
  }

  /** `update`; with `own`, also after the lease was given up (the hand-back's own write). */
  private write(change: (lock: Lock, props: Properties) => Lock, recognise?: Recognise<true>, own = false, entity?: Properties): Promise<void> {
    const from = { snapshot: this.snapshot, lock: readLock(this.snapshot.properties) };
    return this.parts.locks.swap(this.key, `attempt ${this.attempt} held its lease`, from, (current): SwapStep<void> => {
      if (!current) throw this.lostError();
      this.snapshot = current.snapshot;
      if (recognise?.(current.lock)) return { done: undefined };
      this.refuseIfLost(current.lock, own);
      return {
        write: change(current.lock, current.snapshot.properties),
        own: entity,
        then: (written) => {
          this.snapshot = written;
          this.proven();
        },
      };
    });
  }

  /**
   * Runs `write` in a transaction only while this attempt holds the lease on step `seq`;
   * otherwise throws `LeaseLostError` and writes nothing. When the entity already holds this
   * attempt's own earlier write (`recognise`), resolves to what that gives, writing nothing.
   */
  async fenced<T>(write: (tx: StoreTransaction, props: Properties, lock: Lock) => T, recognise?: Recognise<T>): Promise<T> {
    if (this.givenUp) throw this.lostError();
    const result = await this.parts.locks.update(this.key, (tx, found) => {
      const mine = found && recognise?.(found.lock);
      if (mine !== undefined) return mine;
      if (!found) throw this.lostError();
      this.refuseIfLost(found.lock);
      return write(tx, found.props, found.lock);
    });
    this.proven();
    return result;
  }

  /** Throws unless this attempt still holds the lease; after a give-up (`handBack`), only the hand-back's own write (`own`) may go on. */
  private refuseIfLost(lock: Lock, own = false): void {
    const lost = this.lost;
    if (lost) throw lost;
    if (this.givenUp && !own) throw this.lostError();
    if (!holds(lock, this.attempt, this.seq)) throw this.lostError();
  }

  private lostError(): LeaseLostError {
    return new LeaseLostError(`attempt ${this.attempt} no longer holds the lease on ${keyPath(this.key)} step ${this.seq}`);
  }

  /** A write just proved the lease held: the lease is given up only if no other proof follows within the window. */
  private proven(): void {
    if (this.closed || this.abortReason) return;
    this.timers.clearTimeout(this.proofTimer);
    this.proofTimer = this.timers.setTimeout(() => this.lose('unproven'), proofWindow(this.parts.config.leaseDuration));
    this.proofTimer.unref();
  }

  private renewEvery(): number {
    return Math.max(1, Math.floor(this.parts.config.leaseDuration / 3));
  }

  private scheduleRenewal(): void {
    if (!this.renewals) return;
    this.renewTimer = this.timers.setTimeout(() => {
      this.renewDueAt = this.timers.now() + this.renewEvery();
      this.renewing = this.renew().finally(() => {
        this.renewing = undefined;
        this.scheduleRenewal();
      });
    }, Math.max(1, this.renewDueAt - this.timers.now()));
    this.renewTimer.unref();
  }

  private async renew(): Promise<void> {
    try {
      await this.update((lock) => renewLease(lock, { now: new Date(this.parts.config.clock()) }));
    } catch (error) {
      if (error instanceof LeaseLostError) this.lose('lost');
      else this.parts.config.logger.warn('lease renewal failed; retrying at the next tick', { key: keyPath(this.key), seq: this.seq, error: String(error) });
    }
  }

  private lose(reason: 'lost' | 'unproven' | 'timeout'): void {
    if (this.abortReason || this.closed) return;
    this.renewals = false;
    this.timers.clearTimeout(this.renewTimer);
    this.timers.clearTimeout(this.timeoutTimer);
    this.timers.clearTimeout(this.proofTimer);
    const where = `${keyPath(this.key)} step ${this.seq}`;
    const fields = { key: keyPath(this.key), seq: this.seq, attempt: this.attempt };
    const event = { key: this.key, seq: this.seq, attempt: this.attempt };
    if (reason === 'timeout') {
      this.abort(new LeaseTimeoutError(`attempt ${this.attempt} ran past leaseTimeout (${this.parts.config.leaseTimeout} ms) on ${where}`));
      this.parts.emit('timedOut', { ...event, leaseTimeoutMs: this.parts.config.leaseTimeout });
      this.parts.config.logger.warn('lease timed out', fields);
      return;
    }
    this.abort(new LeaseLostError(reason === 'lost'
      ? `attempt ${this.attempt} lost its lease on ${where} to another attempt`
      : `attempt ${this.attempt} gave up its lease on ${where}: no renewal succeeded for ${proofWindow(this.parts.config.leaseDuration)} ms, so it can no longer be proven held`));
    this.parts.emit('lost', event);
    this.parts.config.logger.warn(reason === 'lost' ? 'lease lost' : 'lease given up: renewals kept failing', fields);
  }

  private abort(reason: LeaseLostError | LeaseTimeoutError): void {
    this.abortReason = reason;
    this.controller?.abort(reason);
  }
}
