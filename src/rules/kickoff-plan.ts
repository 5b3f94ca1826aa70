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
import type { Key } from '@google-cloud/datastore';
import { entityProperties } from '../step/handler-types';
import { ChainBusyError } from '../errors/errors';
import { readLock, type Lock } from './lock-fields';
import { scheduledStep, type NextStep } from './ledger-record';
import type { LedgerRecord, Properties } from '../types';

/** What to do with one entity. */
export type KickoffPlan =
  | {
    /** The chain on the entity is this kickoff's own, started by an earlier run of it: never started again. */
    kind: 'own';
    lock: Lock;
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

/** The id of the chain kickoff `kickoffId` starts on the entity whose key identity is `keyId`. */
export function kickoffChainId(kickoffId: string, keyId: string): string {
  return createHash('sha256').update(`kickoff\n${kickoffId}\n${keyId}`).digest('base64url').slice(0, 12);
}

/** What a kickoff keeps of the lock it starts from (`endStepAlerts`: the claims still unsent, with the record due soon). */
export type Carry = (planned: { lock: Lock; record: LedgerRecord }, from: Lock) => { lock: Lock; record: LedgerRecord };

/** The plan for the entity read as `stored` (undefined when absent). */
export function planKickoff(
  key: Key, stored: Properties | undefined, entity: unknown, chain: string, step: NextStep, now: Date, carry: Carry = (planned) => planned,
): KickoffPlan {
  const props = stored ?? {};
  const lock = readLock(props);
  if (lock.chain === chain) return { kind: 'own', lock };
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
