/**
 * Cloud Scheduler for the chaos run: `POST /sweep` to a live worker every `everyMs`, through the
 * dispatcher (so the request counts as in flight and thaws a frozen worker). The next is timed from
 * the end of the last, so sweeps never pile up behind a slow one.
 */
import type { Dispatcher } from './dispatcher';

/** What the scheduler sent. */
export interface SchedulerStats {
  sweeps: number;
  /** By answer (0: none). */
  statuses: Record<string, number>;
}

const SWEEP_TIMEOUT_MS = 30_000;

export class Scheduler {
  readonly stats: SchedulerStats = { sweeps: 0, statuses: {} };
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly dispatcher: Dispatcher, private readonly everyMs: number) {}

  /** Starts sending, the first after `everyMs`. */
  start(): void {
    this.stopped = false;
    this.next();
  }

  /** Sends one sweep now (also while stopped); resolves with its answer's status. */
  async sweep(): Promise<number> {
    const status = await this.dispatcher.call('/sweep', SWEEP_TIMEOUT_MS);
    this.stats.sweeps++;
    this.stats.statuses[String(status)] = (this.stats.statuses[String(status)] ?? 0) + 1;
    return status;
  }

  /** Stops sending; resolves once the sweep in flight ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private next(): void {
    this.timer = setTimeout(() => {
      this.running = this.sweep().then(() => {
        this.running = undefined;
        if (!this.stopped) this.next();
      });
    }, this.everyMs);
  }
}
