/**
 * One chaos run against an emulator that is already up: proxy, dispatcher, K workers (frozen when
 * idle and drained on SIGTERM when the modes are on), the scheduler's sweeps, the load, the fault
 * schedule, then the faults stop, the run settles, the sweep runs until alerts stop arriving, and
 * the oracle judges what the handlers and the alerter recorded, with the chains' stored state.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Key } from '@google-cloud/datastore';
import { ChainBusyError, Locker } from '../src/index';
import { readLines } from './append-log';
import { openChainStore, type ChainStore } from './chain-store';
import { Dispatcher, type TaskEvent } from './dispatcher';
import { DispatcherQueue } from './dispatcher-queue';
import { drainFigures, type DrainFigures } from './drain';
import { fanOutPlans } from './fan-out-plan';
import { FaultSchedule, type FaultEvent } from './faults';
import { Fleet, type FleetStats, type TermEvent, type UnexpectedDeath } from './fleet';
import type { ChaosOptions } from './options';
import { judge, type FinalState, type Verdict } from './oracle';
import {
  alertsFile, chainNames, effectsFile, logFile, runsFile, type AlertRecord, type EffectRecord, type RunRecord, type WorkerConfig,
} from './protocol';
import { Progress } from './progress';
import { Rng } from './random';
import { Scheduler, type SchedulerStats } from './scheduler';
import { StoreProxy, type ProxyStats } from './store-proxy';
import type { DispatcherStats } from './dispatcher';

/** Everything a run measured, for the report. */
export interface ChaosResult {
  options: ChaosOptions;
  emulatorHost: string;
  dir: string;
  verdict: Verdict;
  dispatcher: DispatcherStats;
  proxy: ProxyStats;
  faults: FaultEvent[];
  workerKills: number;
  deaths: UnexpectedDeath[];
  /** Freezes, thaws, scale-ins, SIGTERMs and what the fleet saw of them. */
  fleet: FleetStats;
  terms: TermEvent[];
  /** What the SIGTERM drains did, from the handlers' records. */
  drain: DrainFigures;
  /** The orchestrator's `POST /sweep` requests (Cloud Scheduler; with `freezeIdle`, and at the end). */
  scheduler: SchedulerStats;
  /** Warning and error lines of the workers' logs, by message. */
  logCounts: Record<string, number>;
  /** Per broken chain: its history (dispatcher, effects, alerts, stored lock). */
  histories: ChainHistory[];
  faultPhaseMs: number;
  wallMs: number;
}

/** What happened to one chain, in time order. */
export interface ChainHistory {
  chain: string;
  lines: string[];
}

const PROJECT_ID = 'locker-chaos';
const MAX_HISTORIES = 3;

export async function runChaos(options: ChaosOptions, emulatorHost: string, progress: (line: string) => void = () => undefined): Promise<ChaosResult> {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), `chaos-${options.seed}-`));
  const secret = randomBytes(16).toString('hex');
  const chainStore = openChainStore(options.emulator, emulatorHost, PROJECT_ID); // straight to the emulator, not through the proxy
  const names = chainNames(options.chains);

  const proxy = new StoreProxy(emulatorHost);
  const storeHost = await proxy.start();
  let fleet: Fleet | undefined;
  const dispatcher = new Dispatcher({ ...options, secret, workers: () => fleet?.urls() ?? [], enter: (url) => fleet?.enter(url) ?? (() => undefined) });
  const dispatcherUrl = await dispatcher.start();
  const scheduler = new Scheduler(dispatcher, options.sweepEveryMs);
  const skews = new Rng(options.seed ^ 0x736b6577);
  const configs: WorkerConfig[] = Array.from({ length: options.workers }, (_, slot) => ({
    ...options, slot, incarnation: 0, projectId: PROJECT_ID, storeHost, dispatcherUrl, secret, dir, calm: false,
    skewMs: Math.round(skews.between(-1, 1) * options.skewFraction * options.leaseMs),
  }));
  fleet = new Fleet(configs, options);
  const faults = new FaultSchedule(options, fleet, proxy);
  let faultPhaseMs = 0;
  try {
    await fleet.start();
    if (options.freezeIdle) scheduler.start(); // a frozen worker's sweep timer would not run
    progress(`${options.workers} workers up${modes(options)}; kicking off ${options.chains} chains of ${options.steps} steps`);
    const burstsMs = Math.ceil(options.chains / options.burst) * options.burstEveryMs;
    faults.start(burstsMs + 10_000);
    const phaseStart = Date.now();
    await kickOff(chainStore, dispatcherUrl, secret, options, names);
    const seen = new Progress(dir, options.workers, options.steps, new Set(names));
    const moved = (): number => (seen.update(), seen.records);
    const done = (): boolean => seen.update() === names.length;
    await faultPhase(options, moved, done, () => progress(
      `${seen.update()}/${names.length} chains ended; ${dispatcher.stats.deliveries} deliveries ${JSON.stringify(dispatcher.stats.statuses)}; ${dispatcher.pending()} pending; ${fleet?.urls().length} workers up; fleet ${JSON.stringify(fleet?.stats)}`,
    ));
    faultPhaseMs = Date.now() - phaseStart;
    progress(`faults stop after ${Math.round(faultPhaseMs / 1000)} s; settling`);
    await faults.stop();
    dispatcher.quiet();
    fleet.quiet();
    await settle(options, moved, () => done() && dispatcher.pending() === 0, () => progress(
      `settling: ${seen.update()}/${names.length} chains ended; ${dispatcher.pending()} deliveries pending`,
    ));
    progress(`sweeping until nothing arrived for ${options.alertSettleMs / 1000} s`);
    await sweepWhileMoving(options, scheduler, moved);
    await until(() => dispatcher.pending() === 0, 15_000, 250, () => undefined);
  } finally {
    progress('stopping');
    await faults.stop();
    await scheduler.stop();
    await fleet.stop();
    await dispatcher.stop();
    await proxy.stop();
  }
  writeFileSync(join(dir, 'fleet.json'), `${JSON.stringify({ stats: fleet.stats, terms: fleet.terms, deaths: fleet.deaths }, null, 1)}\n`);
  progress('judging');
  const effects = readAll<EffectRecord>(dir, options.workers, effectsFile);
  const alerts = readAll<AlertRecord>(dir, options.workers, alertsFile);
  const runs = readAll<RunRecord>(dir, options.workers, runsFile);
  const fanOuts = fanOutPlans(names, options);
  let verdict: Verdict;
  let histories: ChainHistory[];
  try {
    const finals = await readFinals(chainStore, names, [...fanOuts.values()].flatMap((p) => p.children.map((c) => c.name)));
    verdict = judge(names, options.steps, effects, alerts, { runs, finals, fanOuts });
    for (const death of fleet.deaths) {
      verdict.violations.push({ rule: 'worker-died', detail: `worker ${death.slot} (incarnation ${death.incarnation}) exited with code ${death.code} signal ${death.signal}: ${death.stderr.slice(-500)}` });
    }
    histories = await chainHistories(verdict, chainStore, dispatcher.history, effects, alerts, runs);
  } finally {
    await chainStore.close();
  }
  return {
    options, emulatorHost, dir, verdict, dispatcher: dispatcher.stats, proxy: proxy.stats, faults: faults.events,
    workerKills: fleet.stats.kills, deaths: fleet.deaths, fleet: fleet.stats, terms: fleet.terms,
    drain: drainFigures(fleet.terms, runs, effects, alerts), scheduler: scheduler.stats,
    logCounts: logCounts(dir, options.workers), histories, faultPhaseMs, wallMs: Date.now() - started,
  };
}

function modes(options: ChaosOptions): string {
  const on = [
    options.freezeIdle ? `frozen when idle (scale-in after ${options.scaleInAfterMs} ms)` : '',
    options.sigterm ? `SIGTERM, ${options.graceMs} ms, SIGKILL` : '',
  ].filter((m) => m !== '');
  return on.length > 0 ? ` (${on.join('; ')})` : '';
}

/**
 * The chains' stored locks at the end, read with the client (not the library): the run's chains,
 * each of which a kickoff stored (one not found means the read looked in the wrong place, and the
 * oracle's rules on stored failures would pass unchecked: the run stops with an error), and the
 * planned children, stored only once their fan-out got that far.
 */
async function readFinals(chainStore: ChainStore, names: readonly string[], children: readonly string[]): Promise<Map<string, FinalState>> {
  const stored = await chainStore.readChains([...names, ...children]);
  const missing = names.filter((name) => !stored.has(name));
  if (missing.length > 0) throw new Error(`chaos: the final read found no stored chain for ${missing.length} kicked-off chains (${missing.slice(0, 5).join(', ')}, ...)`);
  const out = new Map<string, FinalState>();
  for (const [name, entity] of stored) {
    out.set(name, { state: typeof entity.lock_state === 'string' ? entity.lock_state : undefined, seq: typeof entity.lock_seq === 'number' ? entity.lock_seq : Number(entity.lock_seq ?? 0) });
  }
  return out;
}

/**
 * The chains settled: sweeps go on, every `sweepEveryMs`, until no effect or alert arrived for
 * `alertSettleMs` (at most 5 min), so alerts the library leaves to the sweep reach the alerter.
 */
async function sweepWhileMoving(options: ChaosOptions, scheduler: Scheduler, moved: () => number): Promise<void> {
  const deadline = Date.now() + 5 * 60_000;
  let last = moved();
  let lastMoveAt = Date.now();
  while (Date.now() < deadline && Date.now() - lastMoveAt < options.alertSettleMs) {
    await scheduler.sweep();
    await sleep(Math.min(options.sweepEveryMs, options.alertSettleMs));
    const now = moved();
    if (now !== last) {
      last = now;
      lastMoveAt = Date.now();
    }
  }
}

/** Kicks the chains off in bursts, from the orchestrator's own Locker (straight to the emulator). */
async function kickOff(chainStore: ChainStore, dispatcherUrl: string, secret: string, options: ChaosOptions, names: readonly string[]): Promise<void> {
  const locker = new Locker({
    store: chainStore.store,
    queue: new DispatcherQueue(dispatcherUrl, secret),
    authenticate: false,
    leaseDuration: options.leaseMs,
    stallAfter: Math.max(options.stallAfterMs, options.leaseMs), // as on the workers: when the sweep re-delivers a kickoff's step
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
  });
  for (let i = 0; i < names.length; i += options.burst) {
    const burstStart = Date.now();
    await Promise.all(names.slice(i, i + options.burst).map((name) => kickOne(locker, chainStore.key(name))));
    const wait = options.burstEveryMs - (Date.now() - burstStart);
    if (wait > 0 && i + options.burst < names.length) await sleep(wait);
  }
}

async function kickOne(locker: Locker, key: Key): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await locker.schedule(key, { done: 0 }, '/step', { from: 0 });
      return;
    } catch (error) {
      if (error instanceof ChainBusyError) return; // an earlier try committed
      if (attempt >= 10) throw error;
      await sleep(200 * attempt);
    }
  }
}

/**
 * The faults go on until every chain ended, `maxFaultMs` passed, or nothing moved (no new effect or
 * alert) for `stallMs`: chains stuck at a lost step would otherwise keep the faults going forever.
 */
async function faultPhase(options: ChaosOptions, moved: () => number, done: () => boolean, tick: () => void): Promise<void> {
  const stallMs = Math.max(15_000, 3 * (options.stallAfterMs + options.leaseMs));
  await whileMoving(options.maxFaultMs, stallMs, -1, moved, done, tick);
}

/**
 * Faults off, the run goes on while chains still move: it ends once every chain ended and nothing
 * is pending, or nothing moved for `settleMs` (what is left then is stuck), or after 30 min.
 */
async function settle(options: ChaosOptions, moved: () => number, done: () => boolean, tick: () => void): Promise<void> {
  await whileMoving(30 * 60_000, options.settleMs, moved(), moved, done, tick);
}

/**
 * Waits, a second at a time, until `done()`, `forMs` passed, or `moved()` kept the same value for
 * `stallMs` (starting from `last`); calls `tick` every 10 s.
 */
async function whileMoving(
  forMs: number, stallMs: number, last: number, moved: () => number, done: () => boolean, tick: () => void,
): Promise<void> {
  const deadline = Date.now() + forMs;
  let lastMoveAt = Date.now();
  for (let ticks = 1; !done() && Date.now() < deadline && Date.now() - lastMoveAt < stallMs; ticks++) {
    await sleep(1_000);
    const now = moved();
    if (now !== last) {
      last = now;
      lastMoveAt = Date.now();
    }
    if (ticks % 10 === 0) tick();
  }
}

function readAll<T>(dir: string, workers: number, file: (dir: string, slot: number) => string): T[] {
  return Array.from({ length: workers }, (_, slot) => readLines<T>(file(dir, slot))).flat();
}

function logCounts(dir: string, workers: number): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of readAll<{ severity: string; message: string }>(dir, workers, logFile)) {
    const name = `${line.severity} ${line.message}`;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}

/** The history of the first broken chains: what the dispatcher did, the effects, the alerts, the stored lock. */
async function chainHistories(
  verdict: Verdict, chainStore: ChainStore, dispatched: Map<string, TaskEvent[]>, effects: readonly EffectRecord[], alerts: readonly AlertRecord[],
  runs: readonly RunRecord[],
): Promise<ChainHistory[]> {
  const chains = [...new Set(verdict.violations.flatMap((v) => (v.chain ? [v.chain] : [])))].slice(0, MAX_HISTORIES);
  const encoder = new Locker({ store: chainStore.store, authenticate: false });
  const out: ChainHistory[] = [];
  for (const chain of chains) {
    const key = chainStore.key(chain);
    const rows: { t: number; line: string }[] = [];
    for (const e of dispatched.get(encoder.encodeKey(key)) ?? []) {
      rows.push({ t: e.t, line: `dispatcher ${e.what} seq ${e.seq} ${e.name}${e.status !== undefined ? ` → ${e.status}` : ''}${e.worker ? ` at ${e.worker}` : ''}${e.attempt !== undefined ? ` attempt ${e.attempt}` : ''}${e.duplicate ? ' (duplicate)' : ''}` });
    }
    for (const e of effects.filter((x) => x.key === chain)) rows.push({ t: e.t, line: `effect seq ${e.seq} by worker ${e.slot}.${e.incarnation} attempt ${e.attempt} retry ${e.retry}` });
    for (const r of runs.filter((x) => x.key === chain)) {
      rows.push({ t: r.t, line: `${r.what} seq ${r.seq} attempt ${r.attempt} at worker ${r.slot}.${r.incarnation}${r.outcome ? `: ${r.outcome}` : ''}${r.signalled ? ' (signal fired)' : ''}` });
    }
    for (const a of alerts.filter((x) => x.key === chain)) rows.push({ t: a.t, line: `alert ${a.reason} seq ${a.seq} (previous ${a.previousAttempt ?? '-'}, new ${a.newAttempt ?? '-'})` });
    rows.sort((a, b) => a.t - b.t);
    const stored = (await chainStore.readChains([chain])).get(chain);
    const lock = stored ? Object.fromEntries(Object.entries(stored).filter(([k]) => k.startsWith('lock_') || k === 'done')) : undefined;
    const t0 = rows[0]?.t ?? 0;
    out.push({ chain, lines: [...rows.map((r) => `+${String(r.t - t0).padStart(7)} ms  ${r.line}`), `stored: ${JSON.stringify(lock)}`] });
  }
  return out;
}

async function until(ready: () => boolean, withinMs: number, everyMs: number, tick: () => void): Promise<void> {
  const deadline = Date.now() + withinMs;
  let ticks = 0;
  while (!ready() && Date.now() < deadline) {
    await sleep(everyMs);
    if (++ticks % 10 === 0) tick();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
