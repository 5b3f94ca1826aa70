/**
 * The fan-out part (docs/design.md, sections 15 and 18): built once per Locker with the port the
 * fan-out code reads and writes through (`FanParts`: the lock part, the read port, the events, the
 * dispatcher, the ledger and the fan-out settings). A step's attempt reaches fan-out only here:
 * `ctx.fanOut()` starts the children and seals, `ctx.fanIn()` reads what the join is told,
 * `ctx.setResult()` stores a child's result, and an attempt on a child chain settles the child.
 */
import type { Key } from '@google-cloud/datastore';
import type { Arrival } from '../step/arrival';
import type { Lease } from '../step/lease';
import type { Lock } from '../rules/lock-fields';
import type { Json, Properties, StoreTransaction } from '../types';
import { fanIn } from './fan-in';
import type { FanParts } from './read-children';
import type { Header } from './records';
import { sealInTx } from './seal';
import { setChildResult, settleAfterAnswer } from './settle';
import { fanOut } from './start';
import type { FanIn, FanOutChild, FanOutOptions, FanOutStarted } from './types';

/** The fan-out part (see the file's comment); built once per Locker. */
export class FanOuts {
  constructor(private readonly parts: FanParts) {}

  /** Starts every child of step `a` under `lease`, then `seal`s (`ctx.fanOut()`; see `start.ts`). */
  start(
    a: Arrival, lease: Lease, children: Iterable<FanOutChild> | AsyncIterable<FanOutChild>, options: FanOutOptions, seal: (header: Header) => Promise<void>,
  ): Promise<FanOutStarted> {
    return fanOut(this.parts, a, lease, children, options, seal);
  }

  /** Writes the seal in `tx` on the parent read as `props`/`lock`; returns the parent's lock as written (see `seal.ts`). */
  seal(tx: StoreTransaction, key: Key, props: Properties, lock: Lock, header: Header, own: Properties, sent: readonly string[], now: Date): Promise<Lock> {
    return sealInTx(this.parts, tx, key, props, lock, header, own, sent, now);
  }

  /** What the join step `seq` of `chain` on `key` reads (`ctx.fanIn()`); undefined when that step is no join. */
  fanIn(key: Key, chain: string | undefined, seq: number): Promise<FanIn | undefined> {
    return fanIn(this.parts, key, chain, seq);
  }

  /** Stores a child's small result on its record, while it is pending (`ctx.setResult()`). */
  setResult(key: Key, chain: string | undefined, value: Json): Promise<void> {
    return setChildResult(this.parts, key, chain, value);
  }

  /** Settles a child whose chain may have ended, and runs the completion check; never throws (see `settle.ts`). */
  settleAfterAnswer(key: Key, chain: string | undefined): Promise<void> {
    return settleAfterAnswer(this.parts, key, chain);
  }
}
