/**
 * What `locker.shutdown()` needs to know of the attempts in flight: the gate `handle()` checks
 * first (`stopping`), the answers still owed, and the leases held, so that when the time is up
 * their handlers can be stopped through `ctx.signal` and their leases handed back.
 */

/** A lease that can be stopped for a hand-back (see `Lease.interrupt`). */
export interface Interruptible {
  /** Aborts `ctx.signal` with a `ShutdownError`; after `graceMs` a handler still running is given up. */
  interrupt(kind: 'shutdown', graceMs: number): void;
}

/** The attempts a Locker has in flight, and whether it still takes new ones. */
export class Drain {
  /** Set once `shutdown()` began: `handle()` answers 503 at once, before touching the store. */
  stopping = false;
  /** Once the time is up: how long a stopped handler has to return before it is given up, ms. */
  interruptGraceMs: number | undefined;
  private readonly answers = new Set<Promise<unknown>>();
  private readonly leases = new Set<Interruptible>();

  /** Keeps `answer` (one task request's work, up to its answer) until it settles. */
  track<T>(answer: Promise<T>): Promise<T> {
    this.answers.add(answer);
    const done = (): void => { this.answers.delete(answer); };
    answer.then(done, done);
    return answer;
  }

  /** A lease is held by a running handler; when the time is already up, it is stopped at once. */
  holding(lease: Interruptible): void {
    this.leases.add(lease);
    if (this.interruptGraceMs !== undefined) lease.interrupt('shutdown', this.interruptGraceMs);
  }

  /** The lease's attempt ended. */
  released(lease: Interruptible): void {
    this.leases.delete(lease);
  }

  /** Requests whose answer is still owed. */
  get inFlight(): number {
    return this.answers.size;
  }

  /** Stops every running handler through its signal; a handler still running `graceMs` later is given up. */
  interruptAll(graceMs: number): void {
    this.interruptGraceMs = graceMs;
    for (const lease of this.leases) lease.interrupt('shutdown', graceMs);
  }

  /** Resolves once every answer owed is given, or after `ms`, whichever comes first; says which. */
  async settled(ms: number): Promise<boolean> {
    const deadline = performance.now() + ms;
    while (this.answers.size > 0) {
      const left = deadline - performance.now();
      if (left <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => { timer = setTimeout(resolve, left); });
      await Promise.race([Promise.allSettled([...this.answers]), timeout]);
      clearTimeout(timer);
    }
    return true;
  }
}
