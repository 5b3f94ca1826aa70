/**
 * Runs the example app as a new user would: a child process `node --import tsx
 * example-app/main.ts` on a free loopback port, its output captured. Tests stop it by PID.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Status } from '../../example-app/status';

/** The repository root. */
export const ROOT = path.resolve(__dirname, '..', '..');

/** How long the app may take to print its URL, ms. */
const START_LIMIT_MS = 30_000;
/** How long the app may take to exit once asked, ms. */
const STOP_LIMIT_MS = 15_000;

/** A running example app. */
export interface ExampleProcess {
  /** The base URL it printed, without the trailing slash. */
  url: string;
  child: ChildProcess;
  /** Everything it printed on stdout so far. */
  stdout(): string;
  /** Everything it printed on stderr so far. */
  stderr(): string;
  /** Sends SIGTERM and resolves with the exit code (SIGKILL after a bound). */
  stop(): Promise<number | null>;
}

/** What a finished run printed. */
export interface ExampleRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Variables of the example and of the platforms it reads, removed so the test alone decides. */
const CONFIG_VARIABLE = /^(PORT|HOST|EXAMPLE_.*|DATASTORE_.*|GOOGLE_CLOUD_PROJECT|GCLOUD_PROJECT|CLOUD_TASKS_.*|ALERT_.*|GAE_.*|K_SERVICE|CLOUD_RUN_AUTH|SCHEDULER_SERVICE_ACCOUNT)$/;

/** The test's environment without any variable the example reads, plus `env`, on loopback. */
export function exampleEnv(env: Record<string, string> = {}): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CONFIG_VARIABLE.test(name)));
  return { ...clean, PORT: '0', HOST: '127.0.0.1', ...env };
}

function spawnExample(env: NodeJS.ProcessEnv, entry: string[], cwd = ROOT): { child: ChildProcess; out: string[]; err: string[] } {
  const child = spawn(process.execPath, entry, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out: string[] = [];
  const err: string[] = [];
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => out.push(chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => err.push(chunk));
  return { child, out, err };
}

/** How the tests start the example: its source, through tsx. */
export const TSX_ENTRY = ['--import', 'tsx', 'example-app/main.ts'];

/** Starts the app (in `cwd`, the repository by default) and resolves once it printed its URL; rejects with its output if it exits first. */
export async function startExample(env: Record<string, string> = {}, entry: string[] = TSX_ENTRY, childEnv: NodeJS.ProcessEnv = exampleEnv(env), cwd = ROOT): Promise<ExampleProcess> {
  const { child, out, err } = spawnExample(childEnv, entry, cwd);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => fail(`the example printed no URL within ${START_LIMIT_MS} ms`), START_LIMIT_MS);
    const fail = (why: string): void => {
      clearTimeout(timer);
      child.stdout?.off('data', look);
      if (child.exitCode === null) child.kill('SIGKILL');
      reject(new Error(`${why}\nstdout:\n${out.join('')}\nstderr:\n${err.join('')}`));
    };
    const look = (): void => {
      const match = /datastore-locker example listening on (http:\/\/127\.0\.0\.1:\d+)\//.exec(out.join(''));
      if (!match) return;
      clearTimeout(timer);
      child.stdout?.off('data', look);
      resolve(match[1]!);
    };
    child.stdout?.on('data', look);
    void exited.then((code) => fail(`the example exited with code ${code} before printing its URL`));
  });
  return {
    url,
    child,
    stdout: () => out.join(''),
    stderr: () => err.join(''),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      process.kill(child.pid!, 'SIGTERM');
      const killer = setTimeout(() => child.pid && child.exitCode === null && process.kill(child.pid, 'SIGKILL'), STOP_LIMIT_MS);
      try {
        return await exited;
      } finally {
        clearTimeout(killer);
      }
    },
  };
}

/** Runs the app until it exits by itself (e.g. on a configuration error), bounded. */
export async function runExample(env: Record<string, string>): Promise<ExampleRun> {
  const { child, out, err } = spawnExample(exampleEnv(env), TSX_ENTRY);
  const timer = setTimeout(() => child.pid && process.kill(child.pid, 'SIGKILL'), START_LIMIT_MS);
  // 'close', not 'exit': the code, once the last of its output was read ('exit' may come first).
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout: out.join(''), stderr: err.join('') };
}

/** The app's status, from /status.json. */
export async function fetchStatus(url: string): Promise<Status> {
  const response = await fetch(`${url}/status.json`);
  if (!response.ok) throw new Error(`/status.json answered ${response.status}`);
  return (await response.json()) as Status;
}

/** Polls `check` until it returns a value (not undefined), at most `limitMs`; then fails saying `what`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, limitMs = 60_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${limitMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
