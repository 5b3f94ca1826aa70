/**
 * Warms the emulator's JVM (and node's JIT) before anything is measured: the emulator answers
 * several times slower until it has served a few thousand requests.
 */
import { STEP_DONE, expectReply } from './expect';
import { rawTransaction } from './floor';
import { seededSteps, type Target } from './latency';

/** Runs `ops` raw transactions and `ops` steps, `concurrency` at a time, unrecorded. */
export async function warmUp(t: Target, ops: number, concurrency: number): Promise<void> {
  const floorKeys = await seededSteps(t, 'warm-floor', ops);
  const stepKeys = await seededSteps(t, 'warm-step', ops);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < ops) {
      const i = next++;
      await rawTransaction(t.datastore, floorKeys[i]!);
      expectReply(await t.server.send(stepKeys[i]!, 1), STEP_DONE, 'a step');
      await t.datastore.get(floorKeys[i]!);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}
