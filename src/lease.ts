/**
 * A lease is a value with a life cycle: taken by an attempt, renewed every `leaseDuration / 3`
 * while the handler runs, lost when another attempt overwrites it or `leaseTimeout` passes (then
 * its signal aborts), and stopped before the attempt finishes. Every write made on the attempt's
 * behalf is fenced: it proceeds only while the attempt still holds the lease. Single-entity writes
 * (`update`) are compare-and-swaps on the last version this attempt wrote, one round trip each;
 * writes that add an outbox record go through a transaction (`fenced`).
 */
import type { Key } from '@google-cloud/datastore';
import type { Core } from './core';
import { holds } from './decision';
import { ContentionError, LeaseLostError, LeaseTimeoutError } from './errors';
import { keyPath } from './key-codec';
import { readLock, writeLock, type Lock } from './lock-fields';
import { withContentionRetry } from './store/retry';
import { renew as renewLease } from './transitions';
import type { Properties, Snapshot, StoreTransaction } from './types';

export class Lease {
  private readonly controller = new AbortController();
  private renewTimer: NodeJS.Timeout | undefined;
  private timeoutTimer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly core: Core,
    readonly key: Key,
    readonly seq: number,
    readonly attempt: string,
    /** The entity as this attempt last wrote it (the version its next write expects). */
    private snapshot: Snapshot,
  ) {}

  /** Aborts when the lease is lost (`LeaseLostError`) or the attempt runs too long (`LeaseTimeoutError`). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Starts renewing, and the `leaseTimeout` clock. */
  start(): void {
    this.scheduleRenewal();
    this.timeoutTimer = setTimeout(() => this.lose('timeout'), this.core.config.leaseTimeout);
    this.timeoutTimer.unref();
  }

  /** Stops renewing and waits for a renewal in flight, so nothing races the attempt's last write. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.renewTimer);
    clearTimeout(this.timeoutTimer);
    await this.renewing;
  }

  /**
   * Replaces the entity with `change(props, lock)` only while this attempt holds the lease on step
   * `seq`; otherwise throws `LeaseLostError` and writes nothing. A compare-and-swap on the version
   * this attempt last wrote: when something else wrote the entity since, it is read again and
   * the check and change are made on what is there now (bounded, with backoff).
   */
  update(change: (props: Properties, lock: Lock) => Properties): Promise<void> {
    const { store } = this.core.config;
    return withContentionRetry(async () => {
      const lock = readLock(this.snapshot.properties);
      if (!holds(lock, this.attempt, this.seq)) throw this.lostError();
      const written = await this.core.replace(this.key, this.snapshot, change(this.snapshot.properties, lock));
      if (written) {
        this.snapshot = written;
        return;
      }
      const now = await store.read(this.key);
      if (!now) throw this.lostError();
      this.snapshot = now;
      throw new ContentionError(`${keyPath(this.key)} changed while attempt ${this.attempt} held its lease`);
    }, this.core.config.contention);
  }

  /**
   * Runs `write` in a transaction only while this attempt holds the lease on step `seq`;
   * otherwise throws `LeaseLostError` and writes nothing.
   */
  fenced<T>(write: (tx: StoreTransaction, props: Properties, lock: Lock) => T): Promise<T> {
    return this.core.transact(async (tx) => {
      const props = await tx.get(this.key);
      const lock = props ? readLock(props) : undefined;
      if (!props || !lock || !holds(lock, this.attempt, this.seq)) throw this.lostError();
      return write(tx, props, lock);
    });
  }

  private lostError(): LeaseLostError {
    return new LeaseLostError(`attempt ${this.attempt} no longer holds the lease on ${keyPath(this.key)} step ${this.seq}`);
  }

  private scheduleRenewal(): void {
    if (this.stopped) return;
    this.renewTimer = setTimeout(() => {
      this.renewing = this.renew().finally(() => {
        this.renewing = undefined;
        this.scheduleRenewal();
      });
    }, Math.max(1, Math.floor(this.core.config.leaseDuration / 3)));
    this.renewTimer.unref();
  }

  private async renew(): Promise<void> {
    try {
      await this.update((props, lock) => writeLock(props, renewLease(lock, { now: new Date(this.core.config.clock()) })));
    } catch (error) {
      if (error instanceof LeaseLostError) this.lose('lost');
      else this.core.config.logger.warn('lease renewal failed; retrying at the next tick', { key: keyPath(this.key), seq: this.seq, error: String(error) });
    }
  }

  private lose(reason: 'lost' | 'timeout'): void {
    if (this.controller.signal.aborted) return;
    this.stopped = true;
    clearTimeout(this.renewTimer);
    clearTimeout(this.timeoutTimer);
    const where = `${keyPath(this.key)} step ${this.seq}`;
    this.controller.abort(
      reason === 'lost'
        ? new LeaseLostError(`attempt ${this.attempt} lost its lease on ${where} to another attempt`)
        : new LeaseTimeoutError(`attempt ${this.attempt} ran past leaseTimeout (${this.core.config.leaseTimeout} ms) on ${where}`),
    );
    const event = { key: this.key, seq: this.seq, attempt: this.attempt };
    if (reason === 'lost') this.core.emit('lost', event);
    else this.core.emit('timedOut', { ...event, leaseTimeoutMs: this.core.config.leaseTimeout });
    this.core.config.logger.warn(`lease ${reason === 'lost' ? 'lost' : 'timed out'}`, { key: keyPath(this.key), seq: this.seq, attempt: this.attempt });
  }
}
