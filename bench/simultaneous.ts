/**
 * Simultaneous deliveries of one step: `deliveries` copies of the same task sent at once, as Cloud
 * Tasks may when duplicates pile up. Reported per round: whether the handler ran exactly once, how
 * long until every copy was answered, how many Datastore RPCs that took, and the answers.
 */
import { performance } from 'node:perf_hooks';
import type { Datastore } from '@google-cloud/datastore';
import { seed, scheduledStep, type KeySource } from './entities';
import type { SpiedClient } from '../test/support/datastore-spy';
import { rpcsPerOp, totalRpcs } from './rpc-count';
import type { StepServer } from './server';

/** What the simultaneous deliveries of one step did, over several rounds. */
export interface SimultaneousReport {
  deliveries: number;
  rounds: number;
  /** Rounds in which the handler ran exactly once. */
  ranOnce: number;
  /** Milliseconds until all copies were answered, per round. */
  allAnsweredMs: number[];
  /** Datastore RPCs per round (all copies together), mean over the rounds; undefined when not countable. */
  rpcs: number | undefined;
  /** Answers by status over all rounds, e.g. { 200: 38, 503: 2 }. */
  statuses: Record<string, number>;
}

/** Runs `rounds` rounds of `deliveries` simultaneous copies of one fresh step each; `spy` records the server store's RPCs. */
export async function measureSimultaneous(
  datastore: Datastore, server: StepServer, keys: KeySource, deliveries: number, rounds: number, spy: SpiedClient | undefined,
): Promise<SimultaneousReport> {
  const stepKeys = keys.keys(`simultaneous-${deliveries}`, rounds);
  await seed(datastore, stepKeys, () => scheduledStep(1));
  const report: SimultaneousReport = { deliveries, rounds, ranOnce: 0, allAnsweredMs: [], rpcs: undefined, statuses: {} };
  const counted = await rpcsPerOp(spy, rounds, async (i) => {
    const before = server.runs();
    const start = performance.now();
    const replies = await Promise.all(Array.from({ length: deliveries }, () => server.send(stepKeys[i]!, 1)));
    report.allAnsweredMs.push(performance.now() - start);
    if (server.runs() - before === 1) report.ranOnce += 1;
    for (const reply of replies) report.statuses[reply.status] = (report.statuses[reply.status] ?? 0) + 1;
  });
  report.rpcs = counted ? totalRpcs(counted) : undefined;
  return report;
}
