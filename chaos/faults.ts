/**
 * The run's fault schedule outside the dispatcher and the handlers: a worker stopped every
 * `killEveryMs` (SIGKILL, or with `sigterm` SIGTERM, the grace, then SIGKILL) and started again, a store fault every `storeFaultEveryMs` (resets of open connections, or a window
 * of delayed traffic), and one store outage of `outageMs`. All drawn from the seed, in order.
 */
import type { Fleet } from './fleet';
import type { ChaosOptions } from './options';
import { Rng } from './random';
import type { StoreProxy } from './store-proxy';

/** A fault that happened, for the report and for recovery times. */
export interface FaultEvent {
  t: number;
  what: 'kill' | 'reset' | 'delay' | 'outage';
  detail: string;
}

export class FaultSchedule {
  readonly events: FaultEvent[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;
  private killing: Promise<void> = Promise.resolve();
  private killInProgress = false;

  constructor(
    private readonly options: ChaosOptions,
    private readonly fleet: Fleet,
    private readonly proxy: StoreProxy,
  ) {}

  /** Starts the schedule; `expectedMs` is how long the fault phase is expected to last (where the outage falls). */
  start(expectedMs: number): void {
    const o = this.options;
    const kills = new Rng(o.seed ^ 0x6b696c6c);
    const store = new Rng(o.seed ^ 0x73746f72);
    if (o.killEveryMs > 0) this.every(kills, o.killEveryMs, () => this.kill(kills.int(0, o.workers - 1)));
    if (o.storeFaultEveryMs > 0) this.every(store, o.storeFaultEveryMs, () => this.storeFault(store));
    if (o.outageMs > 0) {
      this.at(store.between(0.25, 0.5) * expectedMs, () => {
        this.proxy.outage(o.outageMs);
        this.note('outage', `every store connection refused for ${o.outageMs} ms`);
      });
    }
  }

  /** Stops scheduling faults; resolves once a worker being restarted listens again. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.proxy.quiet();
    await this.killing;
  }

  /** Stops a worker, unless the last stop is still under way (a drain takes up to the grace): stops never queue up. */
  private kill(slot: number): void {
    if (this.killInProgress) return;
    this.note('kill', `${this.options.sigterm ? 'SIGTERM' : 'SIGKILL'} worker ${slot}`);
    this.killInProgress = true;
    this.killing = this.fleet.kill(slot).finally(() => {
      this.killInProgress = false;
    });
  }

  private storeFault(rng: Rng): void {
    if (rng.next() < 0.6) {
      const n = this.proxy.resetSome(rng.between(0.2, 0.6), () => rng.next());
      this.note('reset', `${n} store connection(s) reset`);
    } else {
      const delayMs = rng.int(50, 400);
      const forMs = rng.int(1_000, 3_000);
      this.proxy.delay(delayMs, forMs);
      this.note('delay', `store traffic delayed ${delayMs} ms for ${forMs} ms`);
    }
  }

  /** Runs `fault` every `meanMs` (± 30 %, seeded) until stopped. */
  private every(rng: Rng, meanMs: number, fault: () => void): void {
    const next = (): void => this.at(meanMs * rng.between(0.7, 1.3), () => {
      fault();
      next();
    });
    next();
  }

  private at(ms: number, run: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.stopped) run();
    }, ms);
    this.timers.add(timer);
  }

  private note(what: FaultEvent['what'], detail: string): void {
    this.events.push({ t: Date.now(), what, detail });
  }
}
