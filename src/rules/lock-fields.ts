/**
 * Reading and writing the lock fields on an entity's properties. Reading is tolerant of entities
 * the Go library wrote (no `lock_state`) and of entities that never had a lock; it never trusts
 * stored types blindly.
 */
import { LOCK_FIELD_PREFIX, StepState, type Properties } from '../types';

/** The lock as the rules see it. */
export interface Lock {
  /** When the lock fields were last written; undefined when never. */
  ts: Date | undefined;
  req: string;
  seq: number;
  tries: number;
  /** Undefined when the entity never had a step scheduled. */
  state: StepState | undefined;
  chain: string | undefined;
  /**
   * The tracked work that started the chain (`lock_run`): `k:<kickoffId>` for a bulk kickoff's
   * chain, `f:<fan-out id>` for a fan-out child's; undefined for a chain `schedule()` started. Kept
   * by every step of the chain; the operator's counts and lists of a kickoff or a fan-out read it.
   */
  run: string | undefined;
  task: string | undefined;
  err: string | undefined;
  alerts: string[];
  /**
   * Whether the Go library wrote this lock (a step without `lock_state`): its leases are not
   * renewed, so they are judged by Go's lease timeout. Never stored; any write of this library
   * stores `lock_state` and ends it.
   */
  legacy: boolean;
}

/**
 * Lock fields that are never queried, so they are kept out of indexes. `lock_ts` stays indexed, as
 * in Go, and so does `lock_state`: `locker.inspect()` lists steps by (`lock_state`, `lock_ts`). So
 * does `lock_chain`: the operator's search finds a chain's entity by its id (an equality, served by
 * the built-in single-property index; it changes only when a chain starts).
 */
export const UNINDEXED_LOCK_FIELDS = [
  'lock_req',
  'lock_seq',
  'lock_try',
  'lock_task',
  'lock_err',
  'lock_alerts',
] as const;

export { describeError, MAX_ERROR_LENGTH } from '../errors/error-text';

const STATES: ReadonlySet<string> = new Set(Object.values(StepState));

/** Reads the lock fields of stored properties. */
export function readLock(props: Properties): Lock {
  const seq = integer(props.lock_seq);
  const stored = typeof props.lock_state === 'string' && STATES.has(props.lock_state) ? (props.lock_state as StepState) : undefined;
  const legacy = stored === undefined && seq > 0;
  const state = stored ?? (legacy ? StepState.scheduled : undefined);
  return {
    ts: props.lock_ts instanceof Date ? props.lock_ts : undefined,
    req: typeof props.lock_req === 'string' ? props.lock_req : '',
    seq,
    tries: integer(props.lock_try),
    state,
    chain: optionalString(props.lock_chain),
    run: optionalString(props.lock_run),
    task: optionalString(props.lock_task),
    err: optionalString(props.lock_err),
    alerts: Array.isArray(props.lock_alerts) && props.lock_alerts.length > 0 ? props.lock_alerts.filter((a): a is string => typeof a === 'string') : [],
    legacy,
  };
}

/**
 * The properties with the lock fields replaced by `lock` (unset optional fields are left out).
 * Build `lock` with a transition (`transitions.ts`): it says what `lock_ts` becomes.
 */
export function writeLock(props: Properties, lock: Lock): Properties {
  const out = userProperties(props);
  if (lock.ts !== undefined) out.lock_ts = lock.ts;
  out.lock_req = lock.req;
  out.lock_seq = lock.seq;
  out.lock_try = lock.tries;
  if (lock.state !== undefined) out.lock_state = lock.state;
  if (lock.chain !== undefined) out.lock_chain = lock.chain;
  if (lock.run !== undefined) out.lock_run = lock.run;
  if (lock.task !== undefined) out.lock_task = lock.task;
  if (lock.err !== undefined) out.lock_err = lock.err;
  if (lock.alerts.length > 0) out.lock_alerts = lock.alerts;
  return out;
}

/** Whether two locks store the same fields (the test a write uses to recognise itself, applied). */
export function sameLock(a: Lock, b: Lock): boolean {
  return a.ts?.getTime() === b.ts?.getTime() && a.req === b.req && a.seq === b.seq && a.tries === b.tries &&
    a.state === b.state && a.chain === b.chain && a.run === b.run && a.task === b.task && a.err === b.err &&
    a.alerts.length === b.alerts.length && a.alerts.every((alert, i) => alert === b.alerts[i]);
}

/** The entity's own properties: everything but the lock fields. */
export function userProperties(props: Properties): Properties {
  const out: Properties = {};
  // Object.keys, not Object.entries: it allocates no pair per property, on every write of a step.
  for (const name of Object.keys(props)) {
    if (!name.startsWith(LOCK_FIELD_PREFIX)) out[name] = props[name];
  }
  return out;
}

function integer(value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'bigint' && value >= 0n && value <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(value);
  return 0;
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
