/**
 * The events port: one bound `emit`, the only edge from the parts up to the Locker's listeners
 * and the one place the counters are fed from (docs/design.md, section 15). Each listener is called in turn, isolated: one that throws, or
 * returns a promise that rejects, is logged and ignored. It never changes an answer or a stored
 * state, and never crashes the process (also when the event comes from a timer, such as a renewal).
 */
import type { EventEmitter } from 'node:events';
import type { LockerEvents } from './events';
import { describeError } from '../rules/lock-fields';
import type { Logger } from '../types';

/** Reports an event to the Locker's listeners; resolves to whether there were any. */
export type Emit = <K extends keyof LockerEvents>(name: K, ...args: LockerEvents[K]) => boolean;

/** Calls each listener of `name` on `emitter` with `args`, isolated (see the file's comment). */
export function emitIsolated<K extends keyof LockerEvents>(emitter: EventEmitter<LockerEvents>, logger: Logger, name: K, args: LockerEvents[K]): boolean {
  if (emitter.listenerCount(name) === 0) return false; // the usual case, several times a step: no copy of an empty list
  const listeners = emitter.rawListeners(name) as Array<(...a: LockerEvents[K]) => unknown>;
  for (const listener of listeners) {
    try {
      const result = listener.apply(emitter, args);
      if (isThenable(result)) result.then(undefined, (error: unknown) => listenerFailed(logger, name, error));
    } catch (error) {
      listenerFailed(logger, name, error);
    }
  }
  return listeners.length > 0;
}

/** Where the facts the events carry are counted (`Telemetry.recordEvent`): the metrics are derived from the events. */
export interface EventMetrics {
  recordEvent<K extends keyof LockerEvents>(name: K, args: LockerEvents[K]): void;
}

/**
 * The bound `emit` the parts are given: each event is counted by `metrics` (the counters derived
 * from the events) and reported to the Locker's listeners, so a fact is recorded once, where it happens.
 */
export function emitTo(emitter: EventEmitter<LockerEvents>, logger: Logger, metrics?: EventMetrics): Emit {
  return (name, ...args) => {
    metrics?.recordEvent(name, args);
    return emitIsolated(emitter, logger, name, args);
  };
}

function listenerFailed(logger: Logger, name: string, error: unknown): void {
  try {
    logger.error(`a listener of the "${name}" event failed; ignored`, { error: describeError(error) });
  } catch {
    // The logger is user code too: nothing more can be said.
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
