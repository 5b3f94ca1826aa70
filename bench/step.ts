/**
 * `npm run bench`: the cost of a step through `handle()` next to the cost of one raw Datastore
 * read-write transaction, on the legacy Datastore emulator that `scripts/with-emulators.mjs`
 * starts. Measures, in one run: the raw floor; a full step (HTTP in, acquire, trivial handler,
 * finish) at concurrency 1 and 16; the answer to a duplicate of a finished and of a held step;
 * heap and timer growth over 10,000 steps; and what the OpenTelemetry hooks cost with no SDK
 * registered (`telemetry.ts`). Prints a table, then one JSON line, last.
 *
 * Then kickoffs of 1,000 new chains through the `schedule()` loop, `scheduleMany()` and the raw
 * batched upsert (`kickoff.ts`); `BENCH_ONLY=kickoff` (`npm run bench:kickoff`) runs that part alone.
 * Then a fan-out of 10,000 children against `scheduleMany()` of as many chains (`fanout.ts`);
 * `BENCH_ONLY=fanout` (`npm run bench:fanout`) runs that part alone.
 * Then 10,000 schedules all due at one tick against `scheduleMany()` of as many chains
 * (`recurring.ts`); `BENCH_ONLY=recurring` (`npm run bench:recurring`) runs that part alone.
 *
 * Last, a step against its physical limit on the legacy emulator, the Firestore emulator in
 * Datastore mode and the Firestore emulator in Native mode (`FirestoreStore`; the part starts that
 * emulator itself), with the same code on each (`backends.ts`); `BENCH_ONLY=native`
 * (`npm run bench:native`) runs that part alone, `BENCH_NATIVE=0` leaves it out.
 *
 * `BENCH_QUICK=1` makes a short run (see `settings.ts` for single sizes). `BENCH_LEAK_STORE`
 * chooses the store of the memory check: `datastore` (the emulator, default), `memory` (the
 * in-memory store: the library alone, faster) or `both`. The memory check forces full GCs: with
 * `global.gc` when node runs with `--expose-gc` (e.g. `NODE_OPTIONS=--expose-gc npm run bench`),
 * else by setting that V8 flag at run time.
 */
import { Datastore } from '@google-cloud/datastore';
import { DatastoreStore, MemoryStore } from './library';
import { spyClient, type SpiedClient } from '../test/support/datastore-spy';
import { firestoreDatastore, legacyDatastore } from '../test/support/emulator';
import { KeySource, finishedStep, heldStep, seed } from './entities';
import { DUPLICATE_FINISHED, DUPLICATE_HELD, STEP_DONE, expectReply } from './expect';
import { rawTransaction } from './floor';
import { measureLatency, seededSteps, type Target } from './latency';
import { measureLeak, type LeakReport } from './leak';
import { summaryJson, table, type Results } from './report';
import { rpcsPerOp } from './rpc-count';
import { startStepServer } from './server';
import { readSettings } from './settings';
import { measureSimultaneous } from './simultaneous';
import { measureStampede } from './stampede';
import { measureTelemetry } from './telemetry';
import { kickoffJson, kickoffLines, measureKickoffs } from './kickoff';
import { fanOutJson, fanOutLines, measureFanOut } from './fanout';
import { consoleJson, consoleLines, measureConsole } from './console';
import { measureRecurring, recurringJson, recurringLines } from './recurring';
import { measureThroughput } from './throughput';
import { warmUp } from './warmup';
import { measureBackends } from './backends';
import { againstLimitJson, againstLimitLines } from './against-limit-report';
import type { AgainstLimitSamples } from './against-limit';

const RPC_SAMPLE = 20;

async function main(): Promise<void> {
  const settings = readSettings();
  if (settings.only === 'kickoff') return kickoffsAlone(settings);
  if (settings.only === 'fanout') return fanOutAlone(settings);
  if (settings.only === 'console') return consoleAlone(settings);
  if (settings.only === 'recurring') return recurringAlone(settings);
  if (settings.only === 'native') return backendsAlone(settings);
  const leakStores = leakStoreChoice(process.env.BENCH_LEAK_STORE);
  const datastore = legacyDatastore();
  const keys = new KeySource(datastore, `bench-${process.pid}-${Date.now().toString(36)}`);
  // The store's RPCs are recorded on its generated client (counted in an untimed pass only).
  const spy = spyClient(datastore, { keepRequests: false });
  const server = await startStepServer(new DatastoreStore(datastore, { client: spy.client }));
  const target: Target = { datastore, server, keys };
  const progress = (text: string): void => void process.stderr.write(`bench: ${text}\n`);
  let results: Results;
  let backends: AgainstLimitSamples[] = [];
  try {
    progress(`warming up the emulator: ${settings.jvmWarmup} raw transactions and steps`);
    await warmUp(target, settings.jvmWarmup, settings.concurrency);
    progress(`latency, ${settings.warmup} + ${settings.rounds} rounds`);
    const latency = await measureLatency(target, settings.rounds, settings.warmup);
    progress('counting RPCs per operation');
    const rpcs = await countRpcs(target, spy);
    progress(`${settings.simultaneousRounds} rounds of ${settings.simultaneous} simultaneous deliveries of one step`);
    const simultaneous = await measureSimultaneous(datastore, server, keys, settings.simultaneous, settings.simultaneousRounds, spy);
    progress(`throughput at concurrency ${settings.concurrency}, ${settings.batches} batches of each`);
    const throughput = await measureThroughput(target, settings.batches, settings.batchOps, settings.concurrency, spy);
    const leaks: LeakReport[] = [];
    for (const name of leakStores) {
      progress(`memory and timers, ${settings.leakWarmup} + ${settings.leakSteps} steps on the ${name === 'memory' ? 'in-memory store' : 'emulator'}`);
      const store = name === 'memory' ? new MemoryStore({ projectId: datastore.options.projectId }) : new DatastoreStore(datastore);
      leaks.push(await measureLeak(name === 'memory' ? 'in-memory store' : 'legacy Datastore emulator', store, keys, settings.leakSteps, settings.leakWarmup, settings.concurrency));
    }
    progress('20 simultaneous deliveries of one step on the Firestore emulator, with a store built with no options');
    const stampedes = [await measureStampede('Firestore emulator', firestoreDatastore())];
    progress(`OpenTelemetry hooks without an SDK: ${settings.warmup} + ${settings.rounds} interleaved steps on in-memory stores, with and without the hooks`);
    const telemetry = await measureTelemetry(keys, settings.rounds, settings.warmup);
    progress(`kickoffs of ${settings.kickoffChains} new chains: the schedule() loop, scheduleMany() and the raw batched upsert, ${settings.kickoffRounds} rounds`);
    const kickoffs = await measureKickoffs(datastore, keys, settings.kickoffChains, settings.kickoffRounds);
    progress(`a fan-out of ${settings.fanOutChildren} children against scheduleMany() of as many chains, run to the join`);
    // In a Datastore project of its own: the fan-out's Locker sweeps every namespace of its project,
    // and would re-send the kickoff part's chains (whose queue only recorded their tasks) to routes
    // it does not have, thousands of 404s retried while the fan-out runs.
    const fanOutDatastore = new Datastore({ ...datastore.options, projectId: `${String(datastore.options.projectId)}-fanout` });
    const fanOut = await measureFanOut(fanOutDatastore, new KeySource(fanOutDatastore, `${keys.namespace}-fan`), settings.fanOutChildren);
    const consoleReport = await measureConsole(consoleEmulators(datastore), settings.consoleSizes, progress);
    progress(`${settings.recurringSchedules} schedules all due at one tick, against scheduleMany() of as many chains`);
    const recurring = await measureRecurring(datastore, keys, settings.recurringSchedules);
    if (settings.native) backends = await measureBackends(`${keys.namespace}-limit`, settings, progress);
    results = { settings, emulator: `legacy Datastore emulator (${process.env.DATASTORE_EMULATOR_HOST})`, latency, throughput, rpcs, leaks, simultaneous, stampedes, telemetry, kickoffs, fanOut, console: consoleReport, recurring };
  } finally {
    await server.close();
    await spy.close();
  }
  console.log(backends.length === 0 ? table(results) : `${table(results)}\n\n${againstLimitLines(backends, settings).join('\n')}`);
  console.log(JSON.stringify({ ...summaryJson(results), ...(backends.length > 0 && againstLimitJson(backends)) }));
}

/** `BENCH_ONLY=native` (`npm run bench:native`): a step against its limit on each emulator, Native mode included, its lines, then its JSON line. */
async function backendsAlone(settings: ReturnType<typeof readSettings>): Promise<void> {
  const progress = (text: string): void => void process.stderr.write(`bench: ${text}\n`);
  const backends = await measureBackends(`bench-${process.pid}-${Date.now().toString(36)}-limit`, settings, progress);
  console.log(`datastore-locker step against its limit on the legacy Datastore emulator (${process.env.DATASTORE_EMULATOR_HOST}), the Firestore emulator in Datastore mode (${process.env.LOCKER_FIRESTORE_EMULATOR_HOST}) and in Native mode${settings.quick ? ', quick run' : ''}\n`);
  console.log(againstLimitLines(backends, settings).join('\n'));
  console.log(JSON.stringify({ bench: 'datastore-locker step against its limit', quick: settings.quick, ...againstLimitJson(backends) }));
}

/** `BENCH_ONLY=kickoff` (`npm run bench:kickoff`): the kickoff part alone, its lines, then its JSON line. */
async function kickoffsAlone(settings: ReturnType<typeof readSettings>): Promise<void> {
  const datastore = legacyDatastore();
  const keys = new KeySource(datastore, `bench-${process.pid}-${Date.now().toString(36)}`);
  process.stderr.write(`bench: kickoffs of ${settings.kickoffChains} new chains, ${settings.kickoffRounds} rounds\n`);
  const report = await measureKickoffs(datastore, keys, settings.kickoffChains, settings.kickoffRounds);
  console.log(`datastore-locker kickoff benchmark on the legacy Datastore emulator (${process.env.DATASTORE_EMULATOR_HOST})\n`);
  console.log(kickoffLines(report).join('\n'));
  console.log(JSON.stringify({ bench: 'datastore-locker kickoff', ...kickoffJson(report) }));
}

/** The emulators the console part measures: the Firestore emulator first (count aggregation), then the legacy one. */
function consoleEmulators(legacy: Datastore): Array<{ name: string; datastore: Datastore }> {
  return [{ name: 'Firestore emulator (Datastore mode)', datastore: firestoreDatastore() }, { name: 'legacy Datastore emulator', datastore: legacy }];
}

/** `BENCH_ONLY=console` (`npm run bench:console`): the status page's overview alone, its lines, then its JSON line. */
async function consoleAlone(settings: ReturnType<typeof readSettings>): Promise<void> {
  const progress = (text: string): void => void process.stderr.write(`bench: ${text}\n`);
  const report = await measureConsole(consoleEmulators(legacyDatastore()), settings.consoleSizes, progress);
  console.log(`datastore-locker status page benchmark, in memory, on the Firestore emulator in Datastore mode (${process.env.LOCKER_FIRESTORE_EMULATOR_HOST}) and on the legacy Datastore emulator (${process.env.DATASTORE_EMULATOR_HOST})\n`);
  console.log(consoleLines(report).join('\n'));
  console.log(JSON.stringify({ bench: 'datastore-locker console', ...consoleJson(report) }));
}

/** `BENCH_ONLY=fanout` (`npm run bench:fanout`): the fan-out part alone, its lines, then its JSON line. */
async function fanOutAlone(settings: ReturnType<typeof readSettings>): Promise<void> {
  const datastore = legacyDatastore();
  const keys = new KeySource(datastore, `bench-${process.pid}-${Date.now().toString(36)}`);
  process.stderr.write(`bench: a fan-out of ${settings.fanOutChildren} children against scheduleMany() of as many chains\n`);
  const report = await measureFanOut(datastore, keys, settings.fanOutChildren);
  console.log(`datastore-locker fan-out benchmark on the legacy Datastore emulator (${process.env.DATASTORE_EMULATOR_HOST})\n`);
  console.log(fanOutLines(report).join('\n'));
  console.log(JSON.stringify({ bench: 'datastore-locker fan-out', ...fanOutJson(report) }));
}

/** `BENCH_ONLY=recurring` (`npm run bench:recurring`): the recurring part alone, its lines, then its JSON line. */
async function recurringAlone(settings: ReturnType<typeof readSettings>): Promise<void> {
  const datastore = legacyDatastore();
  const keys = new KeySource(datastore, `bench-${process.pid}-${Date.now().toString(36)}`);
  process.stderr.write(`bench: ${settings.recurringSchedules} schedules all due at one tick, against scheduleMany() of as many chains\n`);
  const report = await measureRecurring(datastore, keys, settings.recurringSchedules);
  console.log(`datastore-locker recurring work benchmark on the legacy Datastore emulator (${process.env.DATASTORE_EMULATOR_HOST})\n`);
  console.log(recurringLines(report).join('\n'));
  console.log(JSON.stringify({ bench: 'datastore-locker recurring', ...recurringJson(report) }));
}

/** RPCs each kind of operation sends, counted in an untimed pass. */
async function countRpcs(t: Target, spy: SpiedClient): Promise<Results['rpcs']> {
  const steps = await seededSteps(t, 'rpc-step', RPC_SAMPLE);
  const floors = await seededSteps(t, 'rpc-floor', RPC_SAMPLE);
  const finished = t.keys.key('rpc-finished');
  const held = t.keys.key('rpc-held');
  await seed(t.datastore, [finished], () => finishedStep(2));
  await seed(t.datastore, [held], () => heldStep(1));
  const firsts = t.keys.keys('rpc-first', RPC_SAMPLE);
  await seed(t.datastore, firsts, () => finishedStep(2));
  return {
    // The floor runs on the hand-written client, whose RPCs have no public hook: not counted.
    floor: await rpcsPerOp(undefined, RPC_SAMPLE, async (i) => void (await rawTransaction(t.datastore, floors[i]!))),
    step: await rpcsPerOp(spy, RPC_SAMPLE, async (i) => expectReply(await t.server.send(steps[i]!, 1), STEP_DONE, 'a step')),
    duplicateFinished: await rpcsPerOp(spy, RPC_SAMPLE, async () => expectReply(await t.server.send(finished, 1), DUPLICATE_FINISHED, 'a duplicate of a finished step')),
    duplicateHeld: await rpcsPerOp(spy, RPC_SAMPLE, async () => expectReply(await t.server.send(held, 1), DUPLICATE_HELD, 'a duplicate of a held step')),
    duplicateFirst: await rpcsPerOp(spy, RPC_SAMPLE, async (i) => expectReply(await t.server.send(firsts[i]!, 1), DUPLICATE_FINISHED, 'the first duplicate of a finished step')),
  };
}

function leakStoreChoice(raw: string | undefined): Array<'memory' | 'datastore'> {
  if (raw === undefined || raw === '' || raw === 'datastore') return ['datastore'];
  if (raw === 'memory') return ['memory'];
  if (raw === 'both') return ['datastore', 'memory'];
  throw new Error(`BENCH_LEAK_STORE must be datastore, memory or both; got ${JSON.stringify(raw)}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
});
