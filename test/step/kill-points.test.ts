/**
 * SIGKILL at deterministic points, then a restart: every chain completes. A child process runs a
 * Locker on the Datastore emulator with the local dispatcher and the sweep on a timer
 * (`support/crash-app.ts`); a fault injector in that app kills it at one named point of one
 * chain's step. The restarted app (same store, no kickoffs) must bring every chain to complete,
 * each side effect recorded once, except the step whose lease holder died inside its handler,
 * which may run twice and raises exactly one overwrite alert.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Key } from '@google-cloud/datastore';
import { KILL_POINTS, type KillPoint } from '../support/kill-points';
import { crashAppEnd } from '../support/crash-app-run';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';

const ROOT = path.resolve(__dirname, '..', '..');
const STEPS = 4;
const CRASH_STEP = 2;
const TIMINGS = { LEASE_MS: '1000', STALL_MS: '1500', SWEEP_MS: '200' };
const datastore = legacyDatastore();

interface Run { child: ChildProcess; out: string[]; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> }

function run(env: Record<string, string>): Run {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/crash-app.ts'], {
    cwd: ROOT, env: { ...process.env, ...TIMINGS, STEPS: String(STEPS), ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: string[] = [];
  child.stdout!.setEncoding('utf8').on('data', (c: string) => out.push(c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => out.push(c));
  // On 'close': after the last of the app's output was read ('exit' may come before it).
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  return { child, out, exited };
}

/** Resolves when `check` returns true; fails after `limitMs` with the app's output. */
async function until(what: string, check: () => Promise<boolean>, app: Run, limitMs = 60_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${app.out.join('').slice(-4000)}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

function stop(app: Run): Promise<unknown> {
  if (app.child.exitCode === null && app.child.signalCode === null) process.kill(app.child.pid!, 'SIGKILL');
  return app.exited;
}

const chainKey = (namespace: string, name: string): Key => datastore.key({ namespace, path: ['CrashChain', name] });

async function sideEffects(namespace: string, chain: string): Promise<Map<number, number>> {
  const runs = new Map<number, number>();
  for (let seq = 1; seq <= STEPS; seq++) {
    const [effect] = await datastore.get(datastore.key({ namespace, path: ['CrashChain', chain, 'SideEffect', `step-${seq}`] }));
    runs.set(seq, Number((effect as { runs?: number } | undefined)?.runs ?? 0));
  }
  return runs;
}

async function overwriteAlerts(namespace: string): Promise<Array<{ chain: string; seq: number }>> {
  const [alerts] = await datastore.runQuery(datastore.createQuery(namespace, 'CrashAlert'));
  return (alerts as Array<{ reason: string; chain: string; seq: number }>).filter((a) => a.reason === 'overwrite').map(({ chain, seq }) => ({ chain, seq }));
}

/** The kill points where the lease holder dies inside its handler: that step may run twice, with one overwrite alert. */
const HOLDER_DIES: ReadonlySet<KillPoint> = new Set(['handler-running', 'after-side-effect']);

describe('SIGKILL at a kill point, then a restart: every chain completes (Datastore emulator)', () => {
  for (const point of KILL_POINTS) {
    it(`killed at ${point}`, async () => {
      const namespace = uniqueNamespace(`kill-${point}`);
      const target = 'target';
      const chains = [target]; // one chain: a second one could be mid-handler at the kill, which would make the outcome depend on timing
      const crashStep = point === 'kickoff-commit' ? 1 : CRASH_STEP;
      const first = run({ NAMESPACE: namespace, CHAINS: chains.join(','), CRASH_AT: point, CRASH_CHAIN: target, CRASH_STEP: String(crashStep) });
      const ended = await crashAppEnd(first, 60_000);
      if (!ended) await stop(first);
      assert.equal(ended?.signal, 'SIGKILL', `the app died at ${point}\n${first.out.join('').slice(-3000)}`);
      assert.match(first.out.join(''), new RegExp(`killed at ${point}`));
      const targetKey = chainKey(namespace, target);
      const [before] = await datastore.get(targetKey);
      assert.notEqual((before as { lock_state?: string } | undefined)?.lock_state, 'complete', 'the target chain was cut short');

      const second = run({ NAMESPACE: namespace, CHAINS: '' });
      try {
        await until('every chain to complete after the restart', async () => {
          const states = await Promise.all(chains.map(async (c) => ((await datastore.get(chainKey(namespace, c)))[0] as { lock_state?: string } | undefined)?.lock_state));
          return states.every((s) => s === 'complete');
        }, second);
      } finally {
        await stop(second);
      }

      for (const chain of chains) {
        const runs = await sideEffects(namespace, chain);
        for (const [seq, count] of runs) {
          const mayRepeat = HOLDER_DIES.has(point) && chain === target && seq === crashStep;
          if (mayRepeat) assert.ok(count === 1 || count === 2, `${chain} step ${seq} ran ${count} times`);
          else assert.equal(count, 1, `${chain} step ${seq} ran once (${point})`);
        }
      }
      const alerts = await overwriteAlerts(namespace);
      assert.deepEqual(alerts, HOLDER_DIES.has(point) ? [{ chain: target, seq: crashStep }] : [], 'overwrite alerts');
    });
  }
});
