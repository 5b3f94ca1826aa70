/**
 * One runner per key at a time, in this process: `alone(id, fn)` runs `fn` once no other `fn` for
 * the same key is running; `busy` and `idle` let a caller see and wait out the one running.
 */
export class KeyGate {
  private readonly running = new Map<string, Promise<void>>();

  /** True while an `alone` call for `id` runs. */
  busy(id: string): boolean {
    return this.running.has(id);
  }

  /** Resolves once no `alone` call for `id` runs. */
  async idle(id: string): Promise<void> {
    for (let current = this.running.get(id); current; current = this.running.get(id)) await current;
  }

  /** Runs `fn` when no other `fn` for `id` runs, and returns what it returns. */
  async alone<T>(id: string, fn: () => Promise<T>): Promise<T> {
    // The check and the claim below run in one turn: no other caller can claim in between.
    for (let current = this.running.get(id); current; current = this.running.get(id)) await current;
    let done!: () => void;
    this.running.set(id, new Promise<void>((resolve) => (done = resolve)));
    try {
      return await fn();
    } finally {
      this.running.delete(id);
      done();
    }
  }
}
