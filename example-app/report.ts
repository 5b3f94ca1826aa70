/**
 * The example's recurring work: a schedule, `heartbeat-report`, that starts a one-step chain every
 * minute (`locker.recurring()`), on the entity `Report:"heartbeat-report"` in the app's namespace.
 * The ticks come with the sweep: the local set-up's `startSweeping()`, or the deployed app's sweep
 * route (Cloud Scheduler or App Engine cron, every minute). Each run counts its side effect, as the
 * chains' steps do, and prints a line; the status page's Schedules section shows its next and last
 * run, and pauses, resumes or runs it now.
 */
import type { Router } from 'express';
import { keyPath, type Properties, type TaskContext } from '../src/index';
import type { ChainDeps } from './chain-deps';

/** The schedule: its name, its handler path and its expression (every minute, UTC). */
export const REPORT = Object.freeze({ name: 'heartbeat-report', path: '/tasks/report', cron: '* * * * *', kind: 'Report' });

/** Declares the schedule on the app's Locker and mounts its handler on `router`. */
export function mountReport(router: Router, deps: ChainDeps): void {
  const key = deps.records.chainKey({ kind: REPORT.kind, name: REPORT.name });
  deps.locker.recurring(REPORT.name, { cron: REPORT.cron, path: REPORT.path, key });
  router.all(REPORT.path, deps.locker.handle<Properties>((ctx) => reportStep(deps, ctx), (p) => p, { kinds: [REPORT.kind] }));
}

/** One run: counts the report once per run (its side effect) and says which tick it is for. */
async function reportStep(deps: ChainDeps, ctx: TaskContext<Properties>): Promise<void> {
  await deps.records.countAttempt(ctx.key, ctx.seq, 'reported');
  await deps.records.countRun(ctx.key, ctx.seq, 'reported');
  const payload = ctx.payload as { scheduledAt?: unknown } | undefined;
  const at = typeof payload?.scheduledAt === 'string' ? payload.scheduledAt : 'an unknown tick';
  deps.say(`report ${keyPath(ctx.key)} step ${ctx.seq} ran: the heartbeat report for ${at}`);
}
