/**
 * What a bulk kickoff does with one entity, as a pure function beside `decide()`: start a chain
 * (the `kickoff` transition, as `schedule()` applies it), report the chain busy, or recognise a
 * chain this kickoff started before (a call made again after a crash).
 *
 * A bulk kickoff's chain ids are derived from its `kickoffId` and the entity's key, so the chain it
 * starts on an entity has the same id, and its step the same task name and ledger record, every
 * time the same kickoff is run: an entity whose chain carries that id was started by it.
 */
import { createHash } from 'node:crypto';
import { Key as DatastoreKey, type Key } from '@google-cloud/datastore';
import { entityProperties } from '../step/handler-types';
import { ChainBusyError } from '../errors/errors';
import { readLock, type Lock } from './lock-fields';
import { scheduledStep, type NextStep } from './ledger-record';
import type { LedgerRecord, Properties } from '../types';

/**
 * The kind of the record a bulk kickoff leaves of each chain it started: one small entity per
 * chain, in the entity's namespace, named by the chain id, written in the kickoff's own commit
 * and never removed, so that the same `kickoffId` never starts a chain on the entity again, also
 * after that chain ended and another ran, or the entity was deleted.
 */
export const KICKOFF_KIND = 'LockerKickoff';

/** The key of the record of kickoff chain `chain` on `key`'s entity. */
export function kickoffRecordKey(key: Key, chain: string): Key {
  return new DatastoreKey(key.namespace ? { namespace: key.namespace, path: [KICKOFF_KIND, chain] } : { path: [KICKOFF_KIND, chain] });
}

/** The properties of the record of a kickoff chain whose first step is `seq`. */
export function kickoffRecord(seq: number, now: Date): { properties: Properties; excludeFromIndexes: string[] } {
  return { properties: { seq, startedAt: now }, excludeFromIndexes: ['seq', 'startedAt'] };
}

/** What to do with one entity. */
export type KickoffPlan =
  | {
    /**
     * This kickoff started a chain on the entity before (an earlier run of it): never started again.
     * `lock` is the entity's lock now: that chain's, or a later one's when it ended and another
     * began (or an empty one when the entity was deleted).
     */
    kind: 'own';
    lock: Lock;
    /** Whether the entity still runs that chain (else it ended, and another may run now). */
    live: boolean;
    /** The chain's first step. */
    seq: number;
  }
  | {
    /** A step of another chain is scheduled or running: left as it is. */
    kind: 'busy';
    seq: number;
    running: boolean;
  }
  | {
    /** Start the chain: write `lock`, with the user's `own` properties, and the step's `record`, at the version read. */
    kind: 'start';
    lock: Lock;
    own: Properties;
    record: LedgerRecord;
    /** The ledger record of the entity's previous step (a failed chain's), to remove once written. */
    previousTask: string | undefined;
  };

/** The longest kickoff id `lock_run` holds as it is. */
export const MAX_PLAIN_RUN_ID = 64;

/**
 * The `lock_run` of a bulk kickoff's chains: `k:` and its kickoff id; for an id longer than
 * {@link MAX_PLAIN_RUN_ID} characters, `k#` and 22 characters of its SHA-256, so the field stays a
 * short string on every step's entity whatever the caller named the kickoff (an indexed string
 * holds at most 1,500 bytes). The prefixes keep a kickoff's and a fan-out's runs apart.
 */
export function kickoffRun(kickoffId: string): string {
  if (kickoffId.length <= MAX_PLAIN_RUN_ID) return `k:${kickoffId}`;
  return `k#${createHash('sha256').update(kickoffId).digest('base64url').slice(0, 22)}`;
}

/** The `lock_run` of a fan-out's children: `f:` and the fan-out's id. */
export function fanOutRun(fanout: string): string {
  return `f:${fanout}`;
}

/** The fan-out a `lock_run` names, if it names one. */
export function fanOutOfRun(run: string | undefined): string | undefined {
  return run?.startsWith('f:') ? run.slice(2) : undefined;
}

/** The id of the chain kickoff `kickoffId` starts on the entity whose key identity is `keyId`. */
export function kickoffChainId(kickoffId: string, keyId: string): string {
  return createHash('sha256').update(`kickoff\n${kickoffId}\n${keyId}`).digest('base64url').slice(0, 12);
}

/** What a kickoff keeps of the lock it starts from (`endStepAlerts`: the claims still unsent, with the record due soon). */
export type Carry = (planned: { lock: Lock; record: LedgerRecord }, from: Lock) => { lock: Lock; record: LedgerRecord };

/**
 * The plan for the entity read as `stored` (undefined when absent), given the kickoff's record of
 * this chain on it (`recorded`, undefined when there is none): a chain this kickoff started before
 * is never started again.
 */
export function planKickoff(
  key: Key, stored: Properties | undefined, entity: unknown, chain: string, step: NextStep, now: Date, carry: Carry = (planned) => planned,
  recorded?: Properties,
): KickoffPlan {
  const props = stored ?? {};
  const lock = readLock(props);
  if (lock.chain === chain) return { kind: 'own', lock, live: true, seq: lock.seq };
  if (recorded !== undefined) return { kind: 'own', lock, live: false, seq: typeof recorded.seq === 'number' ? recorded.seq : 0 };
  let planned;
  try {
    planned = carry(scheduledStep(key, lock, chain, step, now, 'kickoff'), lock);
  } catch (error) {
    if (error instanceof ChainBusyError) return { kind: 'busy', seq: lock.seq, running: lock.req !== '' };
    throw error;
  }
  return {
    kind: 'start',
    lock: planned.lock,
    own: entityProperties(entity),
    record: planned.record,
    previousTask: lock.task,
  };
}
