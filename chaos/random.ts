/**
 * Seeded randomness for the chaos run. Two kinds: a stream (`Rng`) for schedules drawn in a fixed
 * order (kill times, store faults, clock skews), and `chance()`, a pure function of the seed and a
 * label, for decisions taken wherever an event happens to occur (this delivery of this task, this
 * run of this step). The second keeps a fault schedule the same across runs with the same seed even
 * though the interleaving of processes differs.
 */
import { createHash } from 'node:crypto';

/** A small, fast, seeded generator (mulberry32). */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** A float in [min, max). */
  between(min: number, max: number): number {
    return min + this.next() * (max - min);
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}

/** A float in [0, 1) determined by the seed and the label alone. */
export function chance(seed: number, ...label: (string | number)[]): number {
  const digest = createHash('sha256').update(`${seed}\u0000${label.join('\u0000')}`).digest();
  return digest.readUInt32BE(0) / 4294967296;
}

/** A seed for a run when none is given. */
export function freshSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}
