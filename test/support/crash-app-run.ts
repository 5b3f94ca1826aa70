/**
 * A crash-test app in a child process (`support/fan-crash-app.ts`, `support/bulk-crash-app.ts`):
 * started with tsx and an environment, its output kept for the failure message, SIGKILLed by PID,
 * and polled until a check answers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

/** A running crash-test app. */
export interface CrashAppRun {
  child: ChildProcess;
  /** Its stdout and stderr, in order. */
  out: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `script` (relative to the repository root) with `env` over this process's environment. */
export function runCrashApp(script: string, env: Record<string, string>): CrashAppRun {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT, env: { ...process.env, METADATA_SERVER_DETECTION: 'none', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: string[] = [];
  child.stdout!.setEncoding('utf8').on('data', (c: string) => out.push(c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => out.push(c));
  // On 'close': after the last of the app's output was read ('exit' may come before it).
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  return { child, out, exited };
}

/**
 * How the app ended, or undefined when it had not ended within `limitMs`. The wait's timer is
 * cleared as soon as the app ends: a timer left behind keeps the test file's process alive for
 * the rest of `limitMs` after its tests passed (measured: `bulk.kill` took 243 s for 26 s of tests).
 */
export async function crashAppEnd(app: Pick<CrashAppRun, 'exited'>, limitMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), limitMs);
  });
  try {
    return await Promise.race([app.exited, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** SIGKILLs the app (by its PID) unless it already ended; resolves once it exited. */
export function stopCrashApp(app: CrashAppRun): Promise<unknown> {
  if (app.child.exitCode === null && app.child.signalCode === null) process.kill(app.child.pid!, 'SIGKILL');
  return app.exited;
}

/** Polls `check` every `everyMs` until it answers; throws with the app's output once `limitMs` passed or the app exited. */
export async function untilCrashApp<T>(what: string, check: () => Promise<T | undefined>, app: CrashAppRun, limitMs: number, everyMs: number): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline || app.child.exitCode !== null) throw new Error(`no ${what} (exit ${String(app.child.exitCode)})\n${app.out.join('').slice(-4000)}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
