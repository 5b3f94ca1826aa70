/**
 * What a run prints: a readable table, then, as the very last line, one JSON object with the
 * medians, the ratios to the floor and the memory check, for scripts that compare runs.
 */
import { availableParallelism } from 'node:os';
import type { LeakReport } from './leak';
import { describeStampede, type StampedeReport } from './stampede';
import type { LatencySamples } from './latency';
import type { RpcCounts } from './rpc-count';
import { describeRpcs, totalRpcs } from './rpc-count';
import { round, summarize, type Summary } from './stats';
import type { ThroughputSamples } from './throughput';
import type { Settings } from './settings';
import type { SimultaneousReport } from './simultaneous';
import type { TelemetryReport } from './telemetry';
import { kickoffJson, kickoffLines, type KickoffReport } from './kickoff';
import { fanOutJson, fanOutLines, type FanOutReport } from './fanout';
import { consoleJson, consoleLines, type ConsoleReport } from './console';
import { recurringJson, recurringLines, type RecurringReport } from './recurring';

/** The targets, as medians on the legacy emulator. */
export const TARGETS = Object.freeze({ stepToFloor: 1.4, duplicateToFloor: 0.35, throughput16ToFloor: 0.6 });

/** Issue 8's targets against the physical limit (`limit.ts`), as medians. */
export const LIMIT_TARGETS = Object.freeze({ stepToLimit: 1.1, duplicateFirstToLimit: 1.1 });

/** Issue 27's targets at concurrency 16: throughput at least 0.9 × the limit's, fewer than 2.3 commits per step. */
export const THROUGHPUT_TARGETS = Object.freeze({ throughput16ToLimit: 0.9, commitsPerStep16: 2.3 });

/** Everything one run measured. */
export interface Results {
  settings: Settings;
  emulator: string;
  latency: LatencySamples;
  throughput: ThroughputSamples;
  rpcs: { floor?: RpcCounts; step?: RpcCounts; duplicateFinished?: RpcCounts; duplicateHeld?: RpcCounts; duplicateFirst?: RpcCounts };
  leaks: LeakReport[];
  simultaneous?: SimultaneousReport;
  /** 20 simultaneous deliveries of one step on the Firestore emulator, with a store built with no options. */
  stampedes: StampedeReport[];
  /** The same step with and without the OpenTelemetry hooks, no SDK registered. */
  telemetry?: TelemetryReport;
  /** Kickoffs of new chains: the schedule() loop, scheduleMany() and the raw batched upsert. */
  kickoffs?: KickoffReport;
  /** A fan-out of N children against scheduleMany() of N chains, its join, RPCs and hottest entity. */
  fanOut?: FanOutReport;
  /** The status page's overview at scale (`console.ts`). */
  console?: ConsoleReport;
  /** Schedules all due at one tick (`recurring.ts`). */
  recurring?: RecurringReport;
}

/** The medians and ratios both outputs are made of. */
function figures(r: Results) {
  const l = Object.fromEntries(Object.entries(r.latency).map(([k, v]) => [k, summarize(v)])) as Record<keyof LatencySamples, Summary>;
  const floorOps = summarize(r.throughput.floorOpsPerSec).median;
  const stepOps = summarize(r.throughput.stepOpsPerSec).median;
  const limitOps = summarize(r.throughput.limitOpsPerSec).median;
  const limitRecordOps = summarize(r.throughput.limitRecordOpsPerSec).median;
  const floor = l.floor.median;
  const duplicate = Math.max(l.duplicateFinished.median, l.duplicateHeld.median);
  return {
    l, floorOps, stepOps, limitOps, limitRecordOps, duplicate,
    throughput16ToLimit: stepOps / limitOps,
    throughput16ToLimitWithRecord: stepOps / limitRecordOps,
    limitWithRecordToLimit16: limitRecordOps / limitOps,
    commitsPerStep16: r.throughput.stepCommits / r.throughput.steps,
    lookupsPerStep16: r.throughput.stepLookups / r.throughput.steps,
    stepToFloor: l.step.median / floor,
    duplicateToFloor: duplicate / floor,
    duplicateFinishedToFloor: l.duplicateFinished.median / floor,
    duplicateHeldToFloor: l.duplicateHeld.median / floor,
    duplicateFirstToFloor: l.duplicateFirst.median / floor,
    throughput16ToFloor: stepOps / floorOps,
    stepNetOfHttpToFloor: (l.step.median - l.http.median) / floor,
    duplicateNetOfHttpToFloor: (duplicate - l.http.median) / floor,
    stepToLimit: l.step.median / l.stepLimit.median,
    duplicateFirstToLimit: l.duplicateFirst.median / l.duplicateLimit.median,
    stepLimitToFloor: l.stepLimit.median / floor,
    duplicateLimitToFloor: l.duplicateLimit.median / floor,
  };
}

/** The JSON line: flat numbers, so runs compare with a one-line script. */
export function summaryJson(r: Results): Record<string, unknown> {
  const f = figures(r);
  const { l } = f;
  const leak = r.leaks[0];
  return {
    bench: 'datastore-locker step',
    emulator: r.emulator,
    quick: r.settings.quick,
    rounds: r.settings.rounds,
    floorMs: round(l.floor.median), floorP99Ms: round(l.floor.p99),
    stepMs: round(l.step.median), stepP99Ms: round(l.step.p99),
    duplicateMs: round(f.duplicate),
    duplicateFinishedMs: round(l.duplicateFinished.median), duplicateFinishedP99Ms: round(l.duplicateFinished.p99),
    duplicateHeldMs: round(l.duplicateHeld.median), duplicateHeldP99Ms: round(l.duplicateHeld.p99),
    duplicateFirstMs: round(l.duplicateFirst.median), duplicateFirstP99Ms: round(l.duplicateFirst.p99),
    floorOpsPerSec16: round(f.floorOps, 1), stepOpsPerSec16: round(f.stepOps, 1),
    floorCpuMicros16: round(summarize(r.throughput.floorCpuMicros).median, 1), stepCpuMicros16: round(summarize(r.throughput.stepCpuMicros).median, 1),
    limitOpsPerSec16: round(f.limitOps, 1), limitCpuMicros16: round(summarize(r.throughput.limitCpuMicros).median, 1),
    throughput16ToLimit: round(f.throughput16ToLimit), commitsPerStep16: round(f.commitsPerStep16),
    limitRecordOpsPerSec16: round(f.limitRecordOps, 1), limitRecordCpuMicros16: round(summarize(r.throughput.limitRecordCpuMicros).median, 1),
    throughput16ToLimitWithRecord: round(f.throughput16ToLimitWithRecord), limitWithRecordToLimit16: round(f.limitWithRecordToLimit16),
    lookupsPerStep16: round(f.lookupsPerStep16),
    throughputTargetsMet: f.throughput16ToLimit >= THROUGHPUT_TARGETS.throughput16ToLimit && f.commitsPerStep16 < THROUGHPUT_TARGETS.commitsPerStep16,
    stepToFloor: round(f.stepToFloor),
    duplicateToFloor: round(f.duplicateToFloor),
    duplicateFinishedToFloor: round(f.duplicateFinishedToFloor),
    duplicateHeldToFloor: round(f.duplicateHeldToFloor),
    duplicateFirstToFloor: round(f.duplicateFirstToFloor),
    throughput16ToFloor: round(f.throughput16ToFloor),
    stepNetOfHttpToFloor: round(f.stepNetOfHttpToFloor),
    duplicateNetOfHttpToFloor: round(f.duplicateNetOfHttpToFloor),
    lookupMs: round(l.lookup.median), httpMs: round(l.http.median),
    floorBeginMs: round(l.floorBegin.median), floorLookupMs: round(l.floorLookup.median), floorCommitMs: round(l.floorCommit.median),
    rpcsPerStep: r.rpcs.step ? totalRpcs(r.rpcs.step) : null,
    rpcsPerDuplicate: r.rpcs.duplicateFinished ? totalRpcs(r.rpcs.duplicateFinished) : null,
    rpcsPerFirstDuplicate: r.rpcs.duplicateFirst ? totalRpcs(r.rpcs.duplicateFirst) : null,
    rpcsPerFloor: r.rpcs.floor ? totalRpcs(r.rpcs.floor) : null,
    heapGrowthBytes: leak?.heapGrowthBytes ?? null,
    timersBefore: leak?.timersBefore ?? null,
    timersAfter: leak?.timersAfter ?? null,
    timersLeftAlive: leak?.timersLeftAlive ?? null,
    libraryTimersLeftAlive: leak?.libraryTimersLeftAlive ?? null,
    leakSteps: leak?.steps ?? null,
    leakStore: leak?.store ?? null,
    stampedes: r.stampedes.map((x) => ({ emulator: x.emulator, deliveries: x.deliveries, runs: x.runs, ms: round(x.ms), rpcs: x.rpcs })),
    leaks: r.leaks.map((k) => ({ store: k.store, steps: k.steps, heapGrowthBytes: k.heapGrowthBytes, timersBefore: k.timersBefore, timersAfter: k.timersAfter, timersLeftAlive: k.timersLeftAlive, libraryTimersLeftAlive: k.libraryTimersLeftAlive })),
    targetsMet:
      f.stepToFloor <= TARGETS.stepToFloor && f.duplicateToFloor <= TARGETS.duplicateToFloor && f.throughput16ToFloor >= TARGETS.throughput16ToFloor,
    stepLimitMs: round(l.stepLimit.median), stepLimitP99Ms: round(l.stepLimit.p99),
    duplicateLimitMs: round(l.duplicateLimit.median), duplicateLimitP99Ms: round(l.duplicateLimit.p99),
    stepToLimit: round(f.stepToLimit),
    duplicateFirstToLimit: round(f.duplicateFirstToLimit),
    stepLimitToFloor: round(f.stepLimitToFloor),
    duplicateLimitToFloor: round(f.duplicateLimitToFloor),
    limitTargetsMet: f.stepToLimit <= LIMIT_TARGETS.stepToLimit && f.duplicateFirstToLimit <= LIMIT_TARGETS.duplicateFirstToLimit,
    ...simultaneousJson(r.simultaneous),
    ...telemetryJson(r.telemetry),
    ...(r.kickoffs && kickoffJson(r.kickoffs)),
    ...(r.fanOut && fanOutJson(r.fanOut)),
    ...(r.console && consoleJson(r.console)),
    ...(r.recurring && recurringJson(r.recurring)),
  };
}

/** The JSON fields of the telemetry comparison (none when it was not measured). */
function telemetryJson(t: TelemetryReport | undefined): Record<string, unknown> {
  if (!t) return {};
  const hooks = summarize(t.withHooks);
  const plain = summarize(t.without);
  return {
    telemetryHooksReachApi: t.hooksReachApi,
    telemetryStepMs: round(hooks.median, 4), telemetryStepP99Ms: round(hooks.p99, 4),
    telemetryOffStepMs: round(plain.median, 4), telemetryOffStepP99Ms: round(plain.p99, 4),
    telemetryToOff: round(hooks.median / plain.median),
    telemetryHooksMicros: round(t.hooksMicros.api, 3), telemetryHooksOffMicros: round(t.hooksMicros.off, 3),
  };
}

function telemetryLines(t: TelemetryReport): string[] {
  const hooks = summarize(t.withHooks);
  const plain = summarize(t.without);
  return [
    `OpenTelemetry hooks with no SDK registered: ${hooks.n} interleaved steps of each on in-memory stores (the library and loopback HTTP only)`,
    row(['', 'median ms', 'p99 ms', '× off', '', ''], LATENCY_COLUMNS),
    row(['step, telemetry: false', ms(plain.median), ms(plain.p99), '1.00', '(baseline)', ''], LATENCY_COLUMNS),
    row(['step with the hooks (API, no SDK)', ms(hooks.median), ms(hooks.p99), (hooks.median / plain.median).toFixed(2), t.hooksReachApi ? '' : 'HOOKS OFF?', ''], LATENCY_COLUMNS),
    `  the hooks of one step alone (3 spans, 3 counts, wrapping nothing): ${t.hooksMicros.api.toFixed(2)} µs through the API with no SDK, ${t.hooksMicros.off.toFixed(2)} µs with telemetry: false`,
  ];
}

const LATENCY_COLUMNS = [32, 10, 9, 9, 14, 0];
const THROUGHPUT_COLUMNS = [32, 13, 9, 9, 13, 9, 14];

/** The readable table. */
export function table(r: Results): string {
  const f = figures(r);
  const { l } = f;
  const s = r.settings;
  const lines: string[] = [];
  lines.push(`datastore-locker benchmark on the ${r.emulator}${s.quick ? ', quick run' : ''}`);
  lines.push('');
  lines.push(`Latency at concurrency 1: ${s.rounds} interleaved rounds after ${s.jvmWarmup} warm-up operations and ${s.warmup} warm-up rounds`);
  lines.push(row(['', 'median ms', 'p99 ms', '× floor', 'target', 'RPCs per op'], LATENCY_COLUMNS));
  const latencyRow = (label: string, x: Summary, target: string, rpcs: RpcCounts | undefined): string =>
    row([label, ms(x.median), ms(x.p99), (x.median / l.floor.median).toFixed(2), target, describeRpcs(rpcs)], LATENCY_COLUMNS);
  lines.push(latencyRow('raw read-write transaction', l.floor, '(floor)', r.rpcs.floor));
  lines.push(latencyRow('step through handle()', l.step, verdict(f.stepToFloor, TARGETS.stepToFloor, 'max'), r.rpcs.step));
  lines.push(latencyRow('repeated duplicate, finished step', l.duplicateFinished, verdict(f.duplicateFinishedToFloor, TARGETS.duplicateToFloor, 'max'), r.rpcs.duplicateFinished));
  lines.push(latencyRow('repeated duplicate, held step', l.duplicateHeld, verdict(f.duplicateHeldToFloor, TARGETS.duplicateToFloor, 'max'), r.rpcs.duplicateHeld));
  lines.push(latencyRow('first duplicate (one lookup)', l.duplicateFirst, '(no target)', r.rpcs.duplicateFirst));
  lines.push(latencyRow('limit: lookup + 2 commits + HTTP', l.stepLimit, '(step limit)', undefined));
  lines.push(latencyRow('limit: lookup + HTTP', l.duplicateLimit, '(dup. limit)', undefined));
  lines.push('');
  lines.push('Against the physical limit (the round trips a step or a first duplicate cannot do without, back to back)');
  lines.push(row(['', 'median ms', 'limit ms', '× limit', 'target', '× floor'], LATENCY_COLUMNS));
  lines.push(row(['step through handle()', ms(l.step.median), ms(l.stepLimit.median), f.stepToLimit.toFixed(2), verdict(f.stepToLimit, LIMIT_TARGETS.stepToLimit, 'max'), f.stepToFloor.toFixed(2)], LATENCY_COLUMNS));
  lines.push(row(['first duplicate', ms(l.duplicateFirst.median), ms(l.duplicateLimit.median), f.duplicateFirstToLimit.toFixed(2), verdict(f.duplicateFirstToLimit, LIMIT_TARGETS.duplicateFirstToLimit, 'max'), f.duplicateFirstToFloor.toFixed(2)], LATENCY_COLUMNS));
  lines.push('');
  if (r.simultaneous) lines.push(...simultaneousLines(r.simultaneous), '');
  const t = r.throughput;
  lines.push(`Throughput at concurrency ${s.concurrency}: ${s.batches} alternating batches of ${s.batchOps * s.concurrency} operations of each kind`);
  lines.push(row(['', 'median ops/s', 'p50 ms', 'p99 ms', 'node CPU µs', '× floor', 'target'], THROUGHPUT_COLUMNS));
  const throughputRow = (label: string, rate: number, latencies: number[], cpu: number[], target: string): string => {
    const lat = summarize(latencies);
    return row([label, rate.toFixed(0), ms(lat.median), ms(lat.p99), summarize(cpu).median.toFixed(0), (rate / f.floorOps).toFixed(2), target], THROUGHPUT_COLUMNS);
  };
  lines.push(throughputRow('raw read-write transactions', f.floorOps, t.floorLatency, t.floorCpuMicros, '(floor)'));
  lines.push(throughputRow('steps through handle()', f.stepOps, t.stepLatency, t.stepCpuMicros, verdict(f.throughput16ToFloor, TARGETS.throughput16ToFloor, 'min')));
  lines.push(throughputRow('limit: lookup + 2 commits + HTTP', f.limitOps, t.limitLatency, t.limitCpuMicros, '(step limit)'));
  lines.push(throughputRow('limit, its lookup with the record', f.limitRecordOps, t.limitRecordLatency, t.limitRecordCpuMicros, '(reference)'));
  lines.push(`  steps ÷ the limit at concurrency ${s.concurrency}: ${f.throughput16ToLimit.toFixed(2)} (${verdict(f.throughput16ToLimit, THROUGHPUT_TARGETS.throughput16ToLimit, 'min')}); commits per step: ${f.commitsPerStep16.toFixed(2)} over ${t.steps} steps, each with a ledger record to remove (${verdict(f.commitsPerStep16, THROUGHPUT_TARGETS.commitsPerStep16, 'below')}); lookups per step: ${f.lookupsPerStep16.toFixed(2)} (the first read, with the record; the removal reads nothing)`);
  lines.push(`  the limit whose lookup also reads the step's record (as a step's does, for the route and body check): ${f.limitWithRecordToLimit16.toFixed(2)} × the limit; steps ÷ it: ${f.throughput16ToLimitWithRecord.toFixed(2)} (what the library's own logic leaves of it)`);
  lines.push(`  (node CPU µs: this process's CPU time per operation, median over batches; the emulator's JVM runs beside it on ${availableParallelism()} CPUs)`);
  lines.push('');
  lines.push(...breakdown(r, l));
  lines.push(`  less the HTTP round trip's median: a step costs ${f.stepNetOfHttpToFloor.toFixed(2)} × floor, a duplicate ${f.duplicateNetOfHttpToFloor.toFixed(2)} × floor (an approximation; the targets above include HTTP)`);
  if (r.stampedes.length > 0) lines.push('', ...r.stampedes.map(describeStampede));
  for (const leak of r.leaks) lines.push('', ...leakLines(leak, s.concurrency));
  if (r.telemetry) lines.push('', ...telemetryLines(r.telemetry));
  if (r.kickoffs) lines.push('', ...kickoffLines(r.kickoffs));
  if (r.fanOut) lines.push('', ...fanOutLines(r.fanOut));
  if (r.console) lines.push('', ...consoleLines(r.console));
  if (r.recurring) lines.push('', ...recurringLines(r.recurring));
  return lines.join('\n');
}

/** Where the time goes: the floor's round trips, a lookup, an HTTP round trip, and the step modelled from its RPCs. */
function breakdown(r: Results, l: Record<keyof LatencySamples, Summary>): string[] {
  const cost: Record<keyof RpcCounts, number> = {
    lookup: l.floorLookup.median, beginTransaction: l.floorBegin.median, commit: l.floorCommit.median,
    rollback: l.floorBegin.median, runQuery: l.floorLookup.median, runAggregationQuery: l.floorLookup.median,
  };
  const model = (rpcs: RpcCounts | undefined, measured: Summary, label: string): string => {
    if (!rpcs) return `  ${label}: RPCs not counted`;
    const sum = (Object.keys(cost) as Array<keyof RpcCounts>).reduce((acc, m) => acc + rpcs[m] * cost[m], l.http.median);
    return `  ${label}: HTTP + ${describeRpcs(rpcs)} one after another ≈ ${ms(sum)} ms; measured ${ms(measured.median)} ms`;
  };
  return [
    'Where the time goes (medians at concurrency 1)',
    `  the floor's round trips: beginTransaction ${ms(l.floorBegin.median)} ms, lookup ${ms(l.floorLookup.median)} ms, commit ${ms(l.floorCommit.median)} ms`,
    `  a lookup outside a transaction: ${ms(l.lookup.median)} ms; an HTTP round trip to an express route that answers at once: ${ms(l.http.median)} ms`,
    model(r.rpcs.step, l.step, 'step'),
    model(r.rpcs.duplicateFinished, l.duplicateFinished, 'duplicate of a finished step'),
    model(r.rpcs.duplicateHeld, l.duplicateHeld, 'duplicate of a held step'),
  ];
}

/** The JSON fields of the simultaneous deliveries (none when they were not measured). */
function simultaneousJson(s: SimultaneousReport | undefined): Record<string, unknown> {
  if (!s) return {};
  return {
    simultaneousDeliveries: s.deliveries,
    simultaneousRounds: s.rounds,
    simultaneousRanOnce: s.ranOnce === s.rounds,
    simultaneousRanOnceRounds: s.ranOnce,
    simultaneousAllAnsweredMs: round(summarize(s.allAnsweredMs).median),
    simultaneousAllAnsweredP99Ms: round(summarize(s.allAnsweredMs).p99),
    simultaneousRpcs: s.rpcs === undefined ? null : round(s.rpcs, 2),
    simultaneousStatuses: s.statuses,
  };
}

function simultaneousLines(s: SimultaneousReport): string[] {
  const answered = summarize(s.allAnsweredMs);
  const statuses = Object.entries(s.statuses).map(([status, n]) => `${status} × ${n}`).join(', ');
  return [
    `${s.deliveries} simultaneous deliveries of one step, ${s.rounds} rounds`,
    `  ran once: ${s.ranOnce === s.rounds ? 'yes' : 'NO'} (${s.ranOnce} of ${s.rounds} rounds ran the handler exactly once)`,
    `  until all ${s.deliveries} were answered: median ${ms(answered.median)} ms, p99 ${ms(answered.p99)} ms`,
    `  Datastore RPCs per round (all ${s.deliveries} together): ${s.rpcs === undefined ? 'n/a' : s.rpcs.toFixed(2)}; answers: ${statuses}`,
  ];
}

function leakLines(leak: LeakReport, concurrency: number): string[] {
  const n = leak.steps.toLocaleString('en-US');
  const lines = [
    `Memory and timers over ${n} steps through handle() at concurrency ${concurrency} on the ${leak.store} (${leak.seconds.toFixed(1)} s)`,
    `  heap used after a forced GC: ${kb(leak.heapBeforeBytes)} before, ${kb(leak.heapAfterBytes)} after: growth ${leak.heapGrowthBytes} bytes (${(leak.heapGrowthBytes / leak.steps).toFixed(1)} bytes per step)`,
    `  live timers (process.getActiveResourcesInfo, which lists ref'd timers only): ${leak.timersBefore} before, ${leak.timersAfter} after; handler runs: ${leak.handlerRuns}`,
    `  live resources before: ${describeResources(leak.resourcesBefore)}; after: ${describeResources(leak.resourcesAfter)}`,
    `  a second pass of ${n} steps under async_hooks: timers and handles it created (unref'd included) still alive once the HTTP connections closed: ${leak.timersLeftAlive} timers, ${leak.libraryTimersLeftAlive} of them created by the library`,
  ];
  for (const [what, count] of Object.entries(leak.leftAlive)) lines.push(`    ${count} × ${what}`);
  if (Object.keys(leak.leftAlive).some((what) => /^(PendingRequest|RANDOMBYTESREQUEST) /.test(what))) {
    lines.push("    (node's http2 PendingRequest and crypto RANDOMBYTESREQUEST resources never report their end to async_hooks; the heap above says whether anything is kept)");
  }
  return lines;
}

export function verdict(ratio: number, target: number, kind: 'max' | 'min' | 'below'): string {
  const met = kind === 'max' ? ratio <= target : kind === 'min' ? ratio >= target : ratio < target;
  return `${{ max: '≤', min: '≥', below: '<' }[kind]} ${target} ${met ? 'met' : 'MISSED'}`;
}

/** Left-aligned first cell, right-aligned number cells of the given widths; a width of 0 leaves the cell as it is. */
export function row(cells: string[], widths: number[]): string {
  return cells
    .map((cell, i) => {
      const width = widths[i] ?? 0;
      if (i === 0) return cell.padEnd(width);
      return width === 0 ? `  ${cell}` : cell.padStart(width);
    })
    .join('')
    .trimEnd();
}

function ms(value: number): string {
  return value.toFixed(2);
}

function kb(bytes: number): string {
  return `${(bytes / 1024).toFixed(0)} KiB`;
}

function describeResources(counts: Record<string, number>): string {
  const entries = Object.entries(counts).sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? 'none' : entries.map(([name, n]) => `${name} ${n}`).join(', ');
}
