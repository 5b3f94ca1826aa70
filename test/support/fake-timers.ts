/**
 * A clock and timers that move only when the test says (`advance`): handed to a part in place of
 * `performance.now()`/`setTimeout`, so its timed rules are tested without waiting. Timers fire in
 * order of their due time; after each, what the fired callback started (store calls on the
 * in-memory store or the emulator) is given time to settle before the next one is considered.
 */
import type { Timer, Timers } from '../../src/config/timers';

interface Pending {
  id: number;
  due: number;
  fn: () => void;
}

/** A fake `Timers` (see the file's comment). */
export class FakeTimers implements Timers {
  private time = 0;
  private next = 1;
  private readonly pending = new Map<number, Pending>();

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const id = this.next++;
    this.pending.set(id, { id, due: this.time + Math.max(0, ms), fn });
    return new FakeTimer(id);
  }

  clearTimeout(timer: Timer | undefined): void {
    if (timer instanceof FakeTimer) this.pending.delete(timer.id);
  }

  /** Timers not yet fired, with how far ahead each is due (ms). */
  dueIn(): number[] {
    return [...this.pending.values()].map((p) => p.due - this.time).sort((a, b) => a - b);
  }

  /**
   * Moves the clock `ms` forward, firing every timer that comes due on the way (timers set by
   * those included), each at its own time; `settle` waits for what each started.
   */
  async advance(ms: number, settle: () => Promise<void> = settleIo): Promise<void> {
    const until = this.time + ms;
    for (;;) {
      const first = [...this.pending.values()].filter((p) => p.due <= until).sort((a, b) => a.due - b.due || a.id - b.id)[0];
      if (!first) break;
      this.pending.delete(first.id);
      this.time = first.due;
      first.fn();
      await settle();
    }
    this.time = until;
    await settle();
  }
}

class FakeTimer implements Timer {
  constructor(readonly id: number) {}
  unref(): this {
    return this;
  }
}

/** Lets promise chains and loopback I/O started by a timer run: a few turns of the event loop. */
export async function settleIo(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}
