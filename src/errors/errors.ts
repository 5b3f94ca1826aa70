/**
 * Every error the library raises. Each has a stable `code` and the HTTP status a task request
 * that meets it is answered with; test with `instanceof`. Each message ends with a link to the
 * error's entry in the errors reference (docs/reference/errors.md), which says when it is thrown.
 */

/** Where the errors reference lives; each class has an entry whose anchor is its name in lower case. */
export const ERRORS_REFERENCE_URL = 'https://github.com/datastore-locker/datastore-locker/blob/main/docs/reference/errors.md';

/** The base of every error the library raises: test with `instanceof`, read `code` and `status`. */
export abstract class LockerError extends Error {
  /** A stable name for the kind of error, e.g. `STORE_UNAVAILABLE`: part of the public API, unlike the message. */
  abstract readonly code: string;
  /** The status a task request is answered with when this error ends it. */
  abstract readonly status: number;
  /**
   * Whether the message gets a link to the class's entry in the errors reference. Off only for
   * errors whose message is the user's own ({@link PermanentError}).
   */
  protected static readonly linksToReference: boolean = true;
  constructor(message: string, options?: { cause?: unknown }) {
    const links = (new.target as unknown as { linksToReference: boolean }).linksToReference;
    super(links ? `${message} (${ERRORS_REFERENCE_URL}#${new.target.name.toLowerCase()})` : message, options);
    this.name = new.target.name;
  }
}

/** Options passed to a constructor are invalid. */
export class ConfigError extends LockerError {
  readonly code = 'CONFIG';
  readonly status = 500;
}

/** A task request is malformed: bad `X-Lock-Key` / `X-Lock-Seq`, a kind this route does not serve, bad JSON. */
export class BadRequestError extends LockerError {
  readonly code = 'BAD_REQUEST';
  readonly status = 400;
}

/** A transaction aborted because another one touched the same entity (gRPC ABORTED). Retried. */
export class ContentionError extends LockerError {
  readonly code = 'CONTENTION';
  readonly status = 503;
}

/**
 * A transient store failure: the store could not be reached, timed out, was overloaded
 * (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED), or contention outlasted every
 * retry. Retrying later may succeed. Nothing changed.
 */
export class StoreUnavailableError extends LockerError {
  readonly code = 'STORE_UNAVAILABLE';
  readonly status = 503;
}

/**
 * The store refused this write for good, and will refuse it again: the entity is too large, has
 * too many index entries, holds a value the store cannot store (INVALID_ARGUMENT and the like).
 * A step that meets it while finishing counts a failed attempt; it is never retried as is.
 */
export class StoreRejectedError extends LockerError {
  readonly code = 'STORE_REJECTED';
  readonly status = 500;
}

/**
 * The store is set up wrongly: PERMISSION_DENIED, UNAUTHENTICATED, a missing database or index.
 * Nothing changed; the task is answered 503 and an operator must fix the set-up (the message
 * says what).
 */
export class StoreConfigError extends LockerError {
  readonly code = 'STORE_CONFIG';
  readonly status = 503;
}

/** The task queue refused or failed to create a task. */
export class QueueError extends LockerError {
  readonly code = 'QUEUE';
  readonly status = 503;
}

/**
 * The attempt no longer holds its lease (another attempt overwrote it, or the step moved on), so
 * it may not write on the step's behalf.
 */
export class LeaseLostError extends LockerError {
  readonly code = 'LEASE_LOST';
  readonly status = 503;
}

/** The attempt ran past `leaseTimeout`; its signal aborted and its lease is no longer renewed. */
export class LeaseTimeoutError extends LockerError {
  readonly code = 'LEASE_TIMEOUT';
  readonly status = 503;
}

/**
 * The reason `ctx.signal` aborts with when `locker.shutdown()` ran out of time and stops the
 * attempts still running. A handler that rejects with it (or with an error whose `cause` is it)
 * shows it stopped: its lease is handed back silently, without counting a failed attempt. See
 * docs/concepts/shutdown-and-time-limits.md.
 */
export class ShutdownError extends LockerError {
  readonly code = 'SHUTDOWN';
  readonly status = 503;
}

/**
 * The reason `ctx.signal` aborts with when an attempt nears the platform's request timeout
 * (`requestTimeout`, less a margin). A handler that rejects with it (or with an error whose `cause`
 * is it) has its lease released for a retry, counted as a failed attempt, and the task is answered
 * 503 before the platform cuts the request. See docs/concepts/shutdown-and-time-limits.md.
 */
export class RequestTimeoutError extends LockerError {
  readonly code = 'REQUEST_TIMEOUT';
  readonly status = 503;
}

/** A kickoff found the chain busy: a step is scheduled or running. */
export class ChainBusyError extends LockerError {
  readonly code = 'CHAIN_BUSY';
  readonly status = 409;
}

/**
 * An operator's action does not fit the step's state: e.g. retrying a step that did not fail, or
 * cancelling a chain that is already complete. Nothing changed.
 */
export class TransitionError extends LockerError {
  readonly code = 'INVALID_TRANSITION';
  readonly status = 409;
}

/**
 * A handler called `ctx.schedule()` or `ctx.complete()` after it had already scheduled or
 * completed its step: a mistake in the handler. Nothing was written; the step stays as the first
 * call left it.
 */
export class StepAlreadyFinishedError extends LockerError {
  readonly code = 'STEP_ALREADY_FINISHED';
  readonly status = 500;
}

/**
 * Thrown by a handler to fail its step for good, without further retries. The task is answered
 * with 200 and the failure is alerted.
 */
export class PermanentError extends LockerError {
  protected static override readonly linksToReference = false;
  readonly code = 'PERMANENT';
  readonly status = 200;
}
