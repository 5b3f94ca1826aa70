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
