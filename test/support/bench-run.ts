/**
 * Runs `bench/step.ts` as `npm run bench` runs it, in a child process with `env` added to this
 * one's, and answers its exit code and output (bench.test.ts, bench-native.long.test.ts).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/** The benchmark's exit code, stdout and stderr; killed after `timeoutMs`. */
export function runBench(env: Record<string, string>, timeoutMs: number): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join('bench', 'step.ts')],
      { cwd: ROOT, env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
