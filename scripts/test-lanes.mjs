// Runs test files in lanes for scripts/test.mjs. A lane is one file at a time on emulators of the
// lane's own; the lanes take the next file from one queue as soon as they are free, so the run
// lasts about as long as its files' time divided by the lanes (the queue is given longest first),
// not as long as fixed groups' longest files. Each file runs in a process of its own (node's test
// runner, one file), whose output is kept and printed in one piece when it ends, so lanes side by
// side never interleave their lines.
import { spawn } from 'node:child_process';
import { emulatorEnv, startEmulators } from './emulators.mjs';

/**
 * How long a lane keeps its emulators before it starts them again, checked before each file. The
 * legacy Datastore emulator slows down over a long run (measured: 500-entity commits in a fresh
 * project took 1-5 s on one that had served 30 minutes of this suite, 0.2-0.6 s on a fresh one
 * beside it under the same load; it is not the data it holds, nor its heap), enough for calls to
 * hit their 5 s deadline. Starting both emulators takes about 3.5 s.
 */
export const EMULATOR_LIFETIME_MS = 4 * 60_000;
/** A file still running after this long is killed (its process group) and counts as failed. */
export const FILE_TIMEOUT_MS = 20 * 60_000;

/** Processes running a test file, killed with their whole group if this process exits first. */
const runningFiles = new Set();
process.once('exit', () => {
  for (const child of runningFiles) killGroup(child);
});

/** The emulators a lane starts: both Datastore emulators, with the environment that reaches them. */
async function startBoth() {
  const emulators = await startEmulators(['datastore', 'firestore']);
  return { env: emulatorEnv(emulators), stop: () => emulators.stop() };
}

/**
 * Runs every file of `files`, in that order of start, `lanes` at a time, and prints each file's
 * output in one piece when it ends. A name of `batches` stands for several files run in one process
 * (a file that imports them: see scripts/test.mjs), which saves each of them a process's start; when
 * it fails, its files are queued again, each alone, and their own results count, so a file never
 * fails for what another left behind in a shared process. `startLaneEmulators` (both Datastore emulators unless given),
 * `emulatorLifetimeMs`, `fileTimeoutMs` and `print` are there for the runner's own test
 * (test/package/test-lanes.test.ts).
 * @param {{ files: string[], batches?: Map<string, string[]>, lanes: number, command: string, args: string[], env: NodeJS.ProcessEnv, startLaneEmulators?: () => Promise<{ env: Record<string, string>, stop(): Promise<void> }>, emulatorLifetimeMs?: number, fileTimeoutMs?: number, print?: (text: string) => void }} run
 * @returns {Promise<{ results: Array<{ file: string, lane: number, code: number, ms: number, timedOut: boolean, batch?: string }>, notRun: string[], lanes: Array<{ files: number, busyMs: number, emulatorStarts: number }>, batchesRunAgain: string[] }>}
 */
export async function runInLanes({ files, batches = new Map(), lanes, command, args, env, startLaneEmulators = startBoth, emulatorLifetimeMs = EMULATOR_LIFETIME_MS, fileTimeoutMs = FILE_TIMEOUT_MS, print = (text) => process.stdout.write(text) }) {
  const queue = [...files];
  const results = [];
  const laneStats = [];
  const batchesRunAgain = [];
  const lane = async (n) => {
    const stats = { files: 0, busyMs: 0, emulatorStarts: 0 };
    laneStats[n - 1] = stats;
    let emulators;
    let startedAt = 0;
    try {
      while (queue.length > 0) {
        const file = queue.shift();
        if (file === undefined) break;
        // A batch of light files reaches no emulator: it neither waits for them nor starts them again.
        if (!batches.has(file) && (emulators === undefined || Date.now() - startedAt >= emulatorLifetimeMs)) {
          await emulators?.stop();
          emulators = undefined;
          try {
            emulators = await startLaneEmulators();
          } catch (err) {
            console.error(`lane ${n}: the emulators did not start, so this lane stops: ${err instanceof Error ? err.message : err}`);
            queue.unshift(file);
            return;
          }
          startedAt = Date.now();
          stats.emulatorStarts += 1;
        }
        const result = await runFile(command, [...args, file], { ...env, ...emulators?.env }, fileTimeoutMs);
        stats.busyMs += result.ms;
        const status = result.timedOut ? `KILLED after ${fileTimeoutMs / 1000} s` : result.code === 0 ? 'passed' : `FAILED (exit code ${result.code})`;
        const batch = batches.get(file);
        if (batch === undefined) {
          stats.files += 1;
          results.push({ file, lane: n, code: result.code, ms: result.ms, timedOut: result.timedOut, ...(result.code !== 0 && { digest: failureDigest(result.output) }) });
          print(`\n── ${file}: ${status} in ${(result.ms / 1000).toFixed(1)} s (lane ${n}) ──\n${result.output}`);
        } else if (result.code === 0) {
          stats.files += batch.length;
          for (const member of batch) results.push({ file: member, lane: n, code: 0, ms: result.ms / batch.length, timedOut: false, batch: file });
          print(`\n── ${batch.length} files in one process (${batch.join(', ')}): ${status} in ${(result.ms / 1000).toFixed(1)} s (lane ${n}) ──\n${result.output}`);
        } else {
          batchesRunAgain.push(file);
          queue.unshift(...batch);
          print(`\n── ${batch.length} files in one process (${batch.join(', ')}): ${status} in ${(result.ms / 1000).toFixed(1)} s (lane ${n}); each runs again alone, and its own result counts ──\n${result.output}`);
        }
      }
    } finally {
      await emulators?.stop();
    }
  };
  await Promise.all(Array.from({ length: lanes }, (_, i) => lane(i + 1)));
  return { results, notRun: queue.flatMap((f) => batches.get(f) ?? [f]), lanes: laneStats, batchesRunAgain };
}

/**
 * The end of a failed file's output that says why: from the spec reporter's "failing tests" list
 * when there is one, else the last lines; at most `maxLines`. The runner prints it again after its
 * summary, since a CI log may keep only the end of a long run.
 */
export function failureDigest(output, maxLines = 40) {
  const lines = output.split('\n');
  const at = lines.findLastIndex((l) => /✖ failing tests:/.test(l));
  const tail = at >= 0 ? lines.slice(at) : lines.slice(-maxLines);
  return tail.length > maxLines ? [...tail.slice(0, maxLines), `… ${tail.length - maxLines} more line(s): see the file's own output above`].join('\n') : tail.join('\n');
}

/** Runs one test file's command; resolves with its exit code, time and output (stdout and stderr as they came). */
function runFile(command, args, env, timeoutMs) {
  return new Promise((resolve) => {
    const started = Date.now();
    const chunks = [];
    let timedOut = false;
    // A group of its own, so that a file that must be killed goes with every process it started.
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    runningFiles.add(child);
    child.stdout.on('data', (chunk) => chunks.push(chunk));
    child.stderr.on('data', (chunk) => chunks.push(chunk));
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, timeoutMs);
    let finished = false;
    const finish = (code, extra = '') => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      runningFiles.delete(child);
      resolve({ code, ms: Date.now() - started, timedOut, output: Buffer.concat(chunks).toString('utf8') + extra });
    };
    child.once('error', (err) => finish(1, `\ncould not run ${command}: ${err.message}\n`));
    child.once('close', (code, signal) => finish(code ?? (signal ? 1 : 0), signal ? `\n(ended by ${signal})\n` : ''));
  });
}

/** Kills a file's process and every process it started (they share its process group). */
function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL'); // no group of its own (or already gone): the process alone
  }
}
