/**
 * One chaos worker: a separate Node process with an Express app and its own Locker on
 * DatastoreStore, reaching the emulator through the fault proxy and creating tasks on the chaos
 * dispatcher. Its one handler, `/step`, is a chain step with a side effect the oracle checks:
 *
 *   1. maybe throw (`permanentRate`: PermanentError; `throwRate`: a plain error), before the effect;
 *   2. record the effect (key, seq, attempt) in this worker's append-only file, flushed to disk;
 *   3. maybe hang (`hangRate`): block the event loop for `hangMs`, past the lease;
 *   4. schedule the next step, or return after the last one (the chain is complete).
 *
 * Faults are decided from the seed, the step and the delivery's retry count. Alerts go to a file of
 * their own. The Locker's clock is skewed by `skewMs`. The sweep runs every `sweepEveryMs`, and on
 * `POST /sweep`.
 */
import { createWriteStream } from 'node:fs';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Datastore } from '@google-cloud/datastore';
import { DatastoreStore, Locker, PermanentError, type AlertEvent, type Logger, type Properties } from '../src/index';
import { AppendLog } from './append-log';
import { DispatcherQueue } from './dispatcher-queue';
import { alertsFile, effectsFile, logFile, type AlertRecord, type EffectRecord, type OrchestratorMessage, type WorkerConfig, type WorkerMessage } from './protocol';
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
  const alerts = await AppendLog.open(alertsFile(config.dir, config.slot));
  const locker = new Locker({
    store: new DatastoreStore(new Datastore({ projectId: config.projectId, apiEndpoint: config.storeHost })),
    queue: new DispatcherQueue(config.dispatcherUrl, config.secret),
    alerter: (event: AlertEvent) => alerts.append(alertRecord(event, config.slot)),
    leaseDuration: config.leaseMs,
    maxRetries: config.maxRetries,
    clock: () => Date.now() + config.skewMs,
    stallAfter: Math.max(config.stallAfterMs, config.leaseMs), // the sweep re-delivers a step stalled this long
    logger: fileLogger(logFile(config.dir, config.slot), config),
  });

  const app = express();
  app.post('/step', locker.handle<Chain>(async (ctx) => {
    const name = String(ctx.key.name);
    const retry = ctx.task.retryCount ?? 0;
    const roll = (what: string): number => chance(config.seed, 'handler', what, name, ctx.seq, retry);
    if (!calm && roll('permanent') < config.permanentRate) throw new PermanentError(`chaos: step ${ctx.seq} fails for good`);
    if (!calm && roll('throw') < config.throwRate) throw new Error(`chaos: step ${ctx.seq} threw`);
    const effect: EffectRecord = { key: name, seq: ctx.seq, attempt: ctx.attempt, retry, slot: config.slot, incarnation: config.incarnation, t: Date.now() };
    await effects.append(effect);
    if (!calm && roll('hang') < config.hangRate) blockEventLoop(config.hangMs);
    ctx.entity.done = ctx.seq;
    if (ctx.seq < config.steps) await ctx.schedule('/step', { from: ctx.seq });
  }, (props: Properties) => ({ done: typeof props.done === 'number' ? props.done : 0 })));
  app.post('/sweep', locker.sweepHandler());
  locker.startSweeping(config.sweepEveryMs);

  const server = app.listen(0, '127.0.0.1', () => {
    const message: WorkerMessage = { type: 'ready', port: (server.address() as AddressInfo).port };
    if (!process.connected) process.exit(0);
    process.send?.(message);
  });
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

/** Warnings and errors go to the worker's log file (info is too chatty for a run of 10,000 steps). */
function fileLogger(path: string, config: WorkerConfig): Logger {
  const out = createWriteStream(path, { flags: 'a' });
  const write = (severity: string, message: string, fields?: Record<string, unknown>): void => {
    out.write(`${JSON.stringify({ t: Date.now(), severity, incarnation: config.incarnation, message, ...fields })}\n`);
  };
  return {
    info: () => undefined,
    warn: (message, fields) => write('WARNING', message, fields),
    error: (message, fields) => write('ERROR', message, fields),
  };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
