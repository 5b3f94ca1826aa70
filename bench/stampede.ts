/**
 * 20 simultaneous deliveries of one step (a retry storm, or a queue that re-delivers at once), on
 * an emulator with a store built with no options (`simultaneous.ts` measures the legacy emulator's
 * in rounds; this one is run on the Firestore emulator): whether the handler ran once, how long until
 * every delivery was answered, and how many RPCs that took. On the Firestore emulator the store's
 * check finds that baseVersion is ignored and every compare-and-swap runs as a transaction under
 * locking reads: the contended case the store keeps cheap by letting one contender per key into a
 * transaction and having the others decide on a plain lookup.
 */
import { performance } from 'node:perf_hooks';
import type { Datastore } from '@google-cloud/datastore';
import { DatastoreStore } from './library';
import { spyClient } from '../test/support/datastore-spy';
import { KeySource, scheduledStep, seed } from './entities';
import { STEP_DONE, expectReply } from './expect';
import { startStepServer } from './server';

/** What one stampede measured. */
export interface StampedeReport {
  emulator: string;
  deliveries: number;
  /** Handler runs for the step (1 is right). */
  runs: number;
  /** Milliseconds from sending the deliveries until the last answer. */
  ms: number;
  /** RPCs the store sent meanwhile. */
  rpcs: number;
  /** Answers by HTTP status. */
  statuses: Record<string, number>;
}

/** Sends `deliveries` deliveries of one fresh step at once to a Locker on `datastore`. */
export async function measureStampede(emulator: string, datastore: Datastore, deliveries = 20): Promise<StampedeReport> {
  const spy = spyClient(datastore, { keepRequests: false });
  const server = await startStepServer(new DatastoreStore(datastore, { client: spy.client }));
  try {
    const keys = new KeySource(datastore, `stampede-${process.pid}-${Date.now().toString(36)}`);
    // One step first, unmeasured: the store's backend check and the first connection happen here.
    const [warm, key] = [keys.key('warm'), keys.key('stampede')];
    await seed(datastore, [warm, key], () => scheduledStep(1));
    expectReply(await server.send(warm, 1), STEP_DONE, 'a warm-up step');
    const runsBefore = server.runs();
    spy.clear();
    const t0 = performance.now();
    const replies = await Promise.all(Array.from({ length: deliveries }, () => server.send(key, 1)));
    const ms = performance.now() - t0;
    const statuses: Record<string, number> = {};
    for (const reply of replies) statuses[reply.status] = (statuses[reply.status] ?? 0) + 1;
    return { emulator, deliveries, runs: server.runs() - runsBefore, ms, rpcs: spy.calls.length, statuses };
  } finally {
    await server.close();
    await spy.close();
  }
}

/** "ran once, all 20 answered in 48 ms, 44 RPCs (200 ×20)" */
export function describeStampede(s: StampedeReport): string {
  const answers = Object.entries(s.statuses).map(([status, n]) => `${status} ×${n}`).join(', ');
  const ran = s.runs === 1 ? 'ran once' : `RAN ${s.runs} TIMES`;
  return `${s.deliveries} simultaneous deliveries of one step on the ${s.emulator}: ${ran}, all answered in ${s.ms.toFixed(0)} ms, ${s.rpcs} RPCs (answers: ${answers})`;
}
