/**
 * A fan-out as the model scripts it: which of the model's entities are the children (1 to 4, a
 * child named twice now and then: the duplicate-child `TypeError`), whether the fan-out is wide
 * (filler children past one page of 100, so that page records matter), the order this attempt's
 * source gives them in, where the source throws part-way, and the policy. The children of one
 * fanning step are fixed by its first attempt (the world keeps them); order and throw are per
 * attempt, as a source reading a changing list would give them.
 */
import type { Key } from '@google-cloud/datastore';
import type { FanOutChild, FanOutPolicy } from '../src/fanout/types';

/** The policies a scripted fan-out uses. */
export const POLICIES = ['settled', 'succeeded', 'deadline'] as const;
export type PolicyName = (typeof POLICIES)[number];

/** The deadline of the `deadline` policy, ms of the model's clock (past a lease, short of a stall). */
export const DEADLINE_MS = 90_000;

/** Filler children of a wide fan-out: with the named ones, one past a page of 100. */
export const WIDE_TOTAL = 101;

/** One fanning attempt's script. */
export interface FanSpec {
  /** The children's entities, as the first attempt of the step gives them (a name twice: a duplicate child). */
  children: string[];
  /** Filler children (`w0`, `w1`, ...) up to {@link WIDE_TOTAL} in all. */
  wide: boolean;
  /** This attempt's source gives the children in reverse order. */
  reverse: boolean;
  /** This attempt's source throws when asked for child number `throwAt` (0-based), if set. */
  throwAt: number | undefined;
  policy: PolicyName;
}

/** The policy object of `name`. */
export function policyOf(name: PolicyName): FanOutPolicy {
  if (name === 'succeeded') return { require: 'succeeded' };
  if (name === 'deadline') return { deadlineMs: DEADLINE_MS };
  return {};
}

/** Every child entity of a fan-out whose named children are `named`, in the first attempt's order. */
export function childNames(named: readonly string[], wide: boolean): string[] {
  if (!wide) return [...named];
  const fillers = Array.from({ length: Math.max(0, WIDE_TOTAL - named.length) }, (_, i) => `w${i}`);
  return [...named, ...fillers];
}

/** The source this attempt gives `fanOut()`: the children in its order, throwing part-way if scripted. */
export function* source(names: readonly string[], spec: FanSpec, child: (name: string, i: number) => FanOutChild): Generator<FanOutChild> {
  const order = spec.reverse ? [...names].reverse() : names;
  for (const [i, name] of order.entries()) {
    if (spec.throwAt !== undefined && i === spec.throwAt) throw new Error(`model: the fan-out's source failed after ${i} children`);
    yield child(name, i);
  }
}

/** A child's key, for the handler to build. */
export type KeyOf = (name: string) => Key;
