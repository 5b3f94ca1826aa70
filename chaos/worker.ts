/**
 * One chaos worker: a separate Node process with an Express app and its own Locker on the run's
 * store (chaos/chain-store.ts: `DatastoreStore`, or `FirestoreStore` on Native mode), reaching
 * the emulator through the fault proxy and creating tasks on the chaos dispatcher. Its handler `/step` is a chain step with a side effect the oracle checks:
 *
 *   0. record that it entered (key, seq, attempt) in this worker's runs file, flushed to disk;
 *   1. maybe work a while (`slowRate`: about `slowMs`), stopping on `ctx.signal` or not (half each);
 *   2. maybe throw (`permanentRate`: PermanentError; `throwRate`: a plain error), before the effect;
 *   3. record the effect (key, seq, attempt) in this worker's effects file, flushed to disk;
 *   4. maybe hang (`hangRate`): block the event loop for `hangMs`, past the lease;
 *   5. schedule the next step, or return after the last one (the chain is complete);
 *   6. record that it left, and how (returned, threw, failed, aborted), before it settles.
 *
 * Fan-out chains (chaos/fan-out-plan.ts, drawn from the seed) fan out at one step instead of 5:
 * `ctx.fanOut()` to their children, with the join at `/join`. A child (`/child`) is a chain of two
 * such steps that fails for good where planned (before anything else), and sets its result just
 * before its last effect, or fans out itself at its first (nested; its join at `/child-join`). A
 * join's step reads every child through `ctx.fanIn()` (all pages) just before its effect (a nested
 * child's join sets the child's result there too), and records what it saw with the effect; then
 * a top-level chain goes on with `/step`.
 * Every handler writes the same run records and suffers the same faults.
 *
 * Faults are decided from the seed, the step and the delivery's retry count; a request with the
 * calm header turns them off for good. Alerts go to a file of their own, each recorded `alertMs`
 * after the alerter got it (a mail server's answer). The Locker's clock is skewed by `skewMs`. The
 * sweep runs on `POST /sweep`, and every `sweepEveryMs` from a timer unless the worker is frozen
 * when idle (its timers would not run). SIGTERM drains: `await locker.shutdown()`, then the server
 * closes (answers in flight leave) and the process exits 0.
 */
import { appendFileSync, createWriteStream } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import type { Key } from '@google-cloud/datastore';
import { Locker, PermanentError, type AlertEvent, type Logger, type Properties, type TaskContext } from '../src/index';
import { AppendLog } from './append-log';
import { openChainStore } from './chain-store';
import { DispatcherQueue } from './dispatcher-queue';
import { CHILD_STEPS, fanOutPlans, type FanOutPlan } from './fan-out-plan';
import {
  alertsFile, CALM_HEADER, chainNames, effectsFile, logFile, runsFile,
  type AlertRecord, type EffectRecord, type JoinSeen, type OrchestratorMessage, type RunRecord, type SeenChild, type WorkerConfig, type WorkerMessage,
} from './protocol';
import { chance } from './random';

/** The chain entity: the last step that ran. */
interface Chain {
  done: number;
}

async function main(): Promise<void> {
  process.on('disconnect', () => process.exit(0)); // the orchestrator is gone
  if (!process.connected) process.exit(0);
  const config = JSON.parse(process.env.CHAOS_WORKER ?? '') as WorkerConfig;
  let calm = config.calm;
  process.on('message', (message: OrchestratorMessage) => {
    if (message.type === 'calm') calm = true;
  });
  const effects = await AppendLog.open(effectsFile(config.dir, config.slot));
  const runs = await AppendLog.open(runsFile(config.dir, config.slot));
  const alerts = await AppendLog.open(alertsFile(config.dir, config.slot));
  const logger = fileLogger(logFile(config.dir, config.slot), config);
  const chains = openChainStore(config.emulator, config.storeHost, config.projectId);
  const locker = new Locker({
    store: chains.store,
    queue: new DispatcherQueue(config.dispatcherUrl, config.secret),
    alerter: async (event: AlertEvent) => {
      if (config.alertMs > 0) await sleep(config.alertMs);
      await alerts.append(alertRecord(event, config.slot));
    },
    leaseDuration: config.leaseMs,
    maxRetries: config.maxRetries,
    clock: () => Date.now() + config.skewMs,
    stallAfter: Math.max(config.stallAfterMs, config.leaseMs), // the sweep re-delivers a step stalled this long
    logger,
    ...(config.alertTimeoutMs > 0 ? { alertTimeout: config.alertTimeoutMs } : {}),
  });

  const keyOf = (name: string): Key => chains.key(name);
  const plans = fanOutPlans(chainNames(config.chains), config);
  const fanOut = (ctx: TaskContext<Chain>, plan: FanOutPlan): Promise<unknown> => ctx.fanOut(
    plan.children.map((c) => ({ key: keyOf(c.name), path: '/child', payload: { from: 0 }, entity: { done: 0 } })),
    { join: plan.joinPath, policy: plan.policy },
  );

  /**
   * Steps 1-4 of the file's comment (the faults, then the effect, then maybe a hang). `before` runs
   * between the faults and the effect: a join's read of its children, a child's result. Anything
   * that can fail on a store fault comes before the effect, as the faults do: a handler that throws
   * after its effect is run again, and the oracle would rightly count that run.
   */
  const effectOf = async (ctx: TaskContext<Chain>, progress: { effect: boolean }, before?: () => Promise<JoinSeen | undefined>): Promise<void> => {
    const name = String(ctx.key.name);
    const retry = ctx.task.retryCount ?? 0;
    const roll = (what: string): number => chance(config.seed, 'handler', what, name, ctx.seq, retry);
    if (!calm && roll('slow') < config.slowRate) {
      await work(Math.round(config.slowMs * (0.5 + roll('slow-for'))), roll('honour') < 0.5 ? ctx.signal : undefined);
    }
    if (!calm && roll('permanent') < config.permanentRate) throw new PermanentError(`chaos: step ${ctx.seq} fails for good`);
    if (!calm && roll('throw') < config.throwRate) throw new Error(`chaos: step ${ctx.seq} threw`);
    const seen = before ? await before() : undefined;
    const effect: EffectRecord = { key: name, seq: ctx.seq, attempt: ctx.attempt, retry, slot: config.slot, incarnation: config.incarnation, t: Date.now(), ...(seen ? { join: seen } : {}) };
    await effects.append(effect);
    progress.effect = true;
    if (!calm && roll('hang') < config.hangRate) blockEventLoop(config.hangMs);
    ctx.entity.done = ctx.seq;
  };

  const step = async (ctx: TaskContext<Chain>, progress: { effect: boolean }): Promise<void> => {
    await effectOf(ctx, progress);
    const plan = plans.get(String(ctx.key.name));
    if (plan?.fanAt === ctx.seq) await fanOut(ctx, plan);
    else if (ctx.seq < config.steps) await ctx.schedule('/step', { from: ctx.seq });
  };

  const childPlans = new Map([...plans.values()].flatMap((p) => p.children.map((c) => [c.name, c] as const)));

  /** A child chain's step: fails for good where planned, else its effect (its result set just before, at its last step), then its next step or its own fan-out. */
  const child = async (ctx: TaskContext<Chain>, progress: { effect: boolean }): Promise<void> => {
    const name = String(ctx.key.name);
    const planned = childPlans.get(name);
    if (planned?.failsAt === ctx.seq) throw new PermanentError(`chaos: child ${name} fails for good at step ${ctx.seq} by design`);
    const last = ctx.seq >= CHILD_STEPS && planned?.nested?.fanAt !== ctx.seq;
    await effectOf(ctx, progress, last ? async () => {
      await ctx.setResult({ of: name });
      return undefined;
    } : undefined);
    if (planned?.nested?.fanAt === ctx.seq) await fanOut(ctx, planned.nested);
    else if (!last) await ctx.schedule('/child', { from: ctx.seq });
  };

  /** A join: reads every child (all pages) and, for a nested child, sets its result from them; records what it saw with its effect; then a top-level chain goes on. */
  const joinStep = async (ctx: TaskContext<Chain>, progress: { effect: boolean }): Promise<void> => {
    const name = String(ctx.key.name);
    await effectOf(ctx, progress, async () => {
      const fanIn = await ctx.fanIn();
      if (!fanIn) throw new Error(`chaos: ${name} step ${ctx.seq} is not a join`);
      const children: SeenChild[] = [];
      let cursor: string | undefined;
      do {
        const page = await fanIn.children(cursor === undefined ? {} : { cursor });
        for (const c of page.children) {
          children.push({ name: String(c.key.name), state: c.state, error: c.error !== undefined, ...(c.result !== undefined ? { result: c.result } : {}) });
        }
        cursor = page.cursor;
      } while (cursor !== undefined);
      if (childPlans.has(name)) await ctx.setResult({ of: name, joined: fanIn.counts.succeeded });
      return { id: fanIn.id, outcome: fanIn.outcome, counts: { ...fanIn.counts }, children };
    });
    if (!childPlans.has(name) && ctx.seq < config.steps) await ctx.schedule('/step', { from: ctx.seq });
  };

  const app = express();
  const stopping = { now: false };
  // Once stopping, every answer closes its connection: the dispatcher's keep-alive connections
  // would otherwise carry requests on and keep the closing server open until the SIGKILL.
  app.use((_req, res, next) => {
    if (stopping.now) res.setHeader('connection', 'close');
    next();
  });
  const calmOnHeader: RequestHandler = (req, _res, next) => {
    if (req.headers[CALM_HEADER] !== undefined) calm = true;
    next();
  };
  /** Steps 0 and 6 of the file's comment around `body`: the run's records, entered and left (and how). */
  const recorded = (body: (ctx: TaskContext<Chain>, progress: { effect: boolean }) => Promise<void>): RequestHandler => locker.handle<Chain>(async (ctx) => {
    const run = { key: String(ctx.key.name), seq: ctx.seq, attempt: ctx.attempt, slot: config.slot, incarnation: config.incarnation };
    await runs.append({ what: 'entered', ...run, t: Date.now() } satisfies RunRecord);
    const progress = { effect: false };
    try {
      await body(ctx, progress);
    } catch (error) {
      const onSignal = ctx.signal.aborted && error === ctx.signal.reason;
      const outcome = onSignal && !progress.effect ? 'aborted' : error instanceof PermanentError ? 'failed' : 'threw';
      await runs.append({ what: 'left', ...run, outcome, signalled: ctx.signal.aborted, t: Date.now() } satisfies RunRecord);
      // Stopped on the signal, but after the side effect (ctx.schedule rejected with the signal's
      // reason): not a clean stop, so it must not read as one (a clean stop is handed back silently).
      if (onSignal && progress.effect) throw new Error(`chaos: step ${ctx.seq} interrupted after its side effect`, { cause: error });
      throw error;
    }
    await runs.append({ what: 'left', ...run, outcome: 'returned', signalled: ctx.signal.aborted, t: Date.now() } satisfies RunRecord);
  }, (props: Properties) => ({ done: typeof props.done === 'number' ? props.done : 0 }));
  app.post('/step', calmOnHeader, recorded(step));
  app.post('/join', calmOnHeader, recorded(joinStep));
  app.post('/child', calmOnHeader, recorded(child));
  app.post('/child-join', calmOnHeader, recorded(joinStep));
  // Cloud Scheduler here calls every sweepEveryMs (shorter than any real schedule): the route's interval is kept below it.
  app.post('/sweep', locker.sweepHandler({ minIntervalMs: Math.floor(config.sweepEveryMs / 2) }));
  if (!config.freezeIdle) locker.startSweeping(config.sweepEveryMs);

  const server = app.listen(0, '127.0.0.1', () => {
    const message: WorkerMessage = { type: 'ready', port: (server.address() as AddressInfo).port };
    if (!process.connected) process.exit(0);
    process.send?.(message);
  });
  process.once('SIGTERM', () => {
    stopping.now = true;
    void drain(locker, server, (message) => logger.notice(message));
  });
}

/** SIGTERM: the Locker drains (its own deadline), then the server closes once the answers in flight left (each closes its connection), then exit 0. */
async function drain(locker: Locker, server: Server, note: (message: string) => void): Promise<void> {
  note('SIGTERM: locker.shutdown()');
  try {
    await locker.shutdown();
  } catch (error) {
    console.error('chaos worker: locker.shutdown() rejected', error);
    process.exit(1);
  }
  note('shutdown() resolved; closing the server');
  server.close(() => {
    note('server closed; exit 0');
    process.exit(0);
  });
  server.closeIdleConnections();
}

/** Work that takes `ms`; with a signal, it stops when the signal fires and rejects with its reason. */
function work(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A stuck process: the thread sleeps, timers and renewals included. */
function blockEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function alertRecord(event: AlertEvent, slot: number): AlertRecord {
  const record: AlertRecord = { id: event.id, reason: event.reason, key: String(event.key.name), seq: event.seq, slot, t: Date.now() };
  if (event.previousAttempt) record.previousAttempt = event.previousAttempt;
  if (event.newAttempt) record.newAttempt = event.newAttempt;
  return record;
}

/** Warnings and errors go to the worker's log file (info is too chatty for a run of 10,000 steps), and the worker's own notices. */
function fileLogger(path: string, config: WorkerConfig): Logger & { notice(message: string): void } {
  const out = createWriteStream(path, { flags: 'a' });
  const write = (severity: string, message: string, fields?: Record<string, unknown>): void => {
    out.write(`${JSON.stringify({ t: Date.now(), severity, incarnation: config.incarnation, message, ...fields })}\n`);
  };
  return {
    info: () => undefined,
    warn: (message, fields) => write('WARNING', message, fields),
    error: (message, fields) => write('ERROR', message, fields),
    // Written at once: the process may exit right after (a stream's pending write would be lost).
    notice: (message) => appendFileSync(path, `${JSON.stringify({ t: Date.now(), severity: 'NOTICE', incarnation: config.incarnation, message: `chaos worker: ${message}` })}\n`),
  };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
