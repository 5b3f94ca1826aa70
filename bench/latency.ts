/**
 * Latency at concurrency 1, interleaved: every round runs one raw transaction, one full step, one
 * duplicate of each kind, and the two parts a duplicate is made of (a plain lookup, an HTTP round
 * trip to a route that answers at once), in an order that rotates from round to round, so machine
 * noise falls on all of them alike. Warm-up rounds run first and are not recorded.
 */
import { performance } from 'node:perf_hooks';
import type { Datastore, Key } from '@google-cloud/datastore';
import { heldStep, seed, type KeySource, scheduledStep, finishedStep } from './entities';
import { DUPLICATE_FINISHED, DUPLICATE_HELD, STEP_DONE, expectReply, type Expectation } from './expect';
import { rawTransaction } from './floor';
import { duplicateLimit, stepLimit } from './limit';
import type { Reply, StepServer } from './server';

/** Milliseconds per operation, by kind; `floor*` are the round trips of the raw transaction. */
export interface LatencySamples {
  floor: number[];
  step: number[];
  duplicateFinished: number[];
  duplicateHeld: number[];
  /** The first duplicate of a step this process never saw: answered from one lookup. */
  duplicateFirst: number[];
  lookup: number[];
  http: number[];
  /** The least a step can cost: one lookup, two conditional commits, one HTTP round trip (`limit.ts`). */
  stepLimit: number[];
  /** The least a first duplicate can cost: one lookup and one HTTP round trip. */
  duplicateLimit: number[];
  floorBegin: number[];
  floorLookup: number[];
  floorCommit: number[];
}

/** What the measurements run against. */
export interface Target {
  datastore: Datastore;
  server: StepServer;
  keys: KeySource;
}

type Timed = (i: number) => Promise<void>;

export async function measureLatency(t: Target, rounds: number, warmup: number): Promise<LatencySamples> {
  const total = rounds + warmup;
  const stepKeys = await seededSteps(t, 'step', total);
  const floorKeys = await seededSteps(t, 'floor', total);
  const finished = t.keys.key('finished');
  const held = t.keys.key('held');
  await seed(t.datastore, [finished], () => finishedStep(2));
  const firsts = t.keys.keys('first', total);
  await seed(t.datastore, firsts, () => finishedStep(2));
  const limitKeys = await seededSteps(t, 'limit', total);
  const limit = { store: t.server.locker.config.store, ping: () => t.server.ping() };

  const samples: LatencySamples = { floor: [], step: [], duplicateFinished: [], duplicateHeld: [], duplicateFirst: [], lookup: [], http: [], stepLimit: [], duplicateLimit: [], floorBegin: [], floorLookup: [], floorCommit: [] };
  let recording = false;
  const floor: Timed = async (i) => {
    const phases = await rawTransaction(t.datastore, floorKeys[i]!);
    if (!recording) return;
    samples.floorBegin.push(phases.begin);
    samples.floorLookup.push(phases.lookup);
    samples.floorCommit.push(phases.commit);
  };
  const kinds: Array<[keyof LatencySamples, Timed]> = [
    ['floor', floor],
    ['step', (i) => sent(t.server.send(stepKeys[i]!, 1), STEP_DONE, 'a step')],
    ['duplicateFinished', () => sent(t.server.send(finished, 1), DUPLICATE_FINISHED, 'a duplicate of a finished step')],
    ['duplicateHeld', () => sent(t.server.send(held, 1), DUPLICATE_HELD, 'a duplicate of a held step')],
    ['duplicateFirst', (i) => sent(t.server.send(firsts[i]!, 1), DUPLICATE_FINISHED, 'the first duplicate of a finished step')],
    ['lookup', async () => void (await t.datastore.get(finished))],
    ['http', () => sent(t.server.ping(), { status: 200, body: /^ok$/ }, 'the empty route')],
    ['stepLimit', (i) => stepLimit(limit, limitKeys[i]!)],
    ['duplicateLimit', (i) => duplicateLimit(limit, firsts[i]!)],
  ];
  for (let i = 0; i < total; i++) {
    recording = i >= warmup;
    await seed(t.datastore, [held], () => heldStep(1)); // keeps the held lease fresh, untimed
    for (let j = 0; j < kinds.length; j++) {
      const [name, run] = kinds[(i + j) % kinds.length]!;
      const start = performance.now();
      await run(i);
      if (recording) samples[name].push(performance.now() - start);
    }
  }
  return samples;
}

/** Keys for `count` more steps, seeded as scheduled. */
export async function seededSteps(t: Target, prefix: string, count: number): Promise<Key[]> {
  const keys = t.keys.keys(prefix, count);
  await seed(t.datastore, keys, () => scheduledStep(1));
  return keys;
}

async function sent(reply: Promise<Reply>, expected: Expectation, what: string): Promise<void> {
  expectReply(await reply, expected, what);
}
