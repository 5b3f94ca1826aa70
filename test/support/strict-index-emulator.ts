/**
 * A legacy Datastore emulator of a test's own that requires indexes as production does: started
 * with `--require_indexes` and an `index.yaml` the test gives (`--index_file`), it answers a query
 * whose composite index the file lacks with FAILED_PRECONDITION, where the shared emulators build
 * any index they are asked for. Stopped by the pid it was started with.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Datastore } from '@google-cloud/datastore';
import { freePort } from './free-port';

const SDK_ROOT = process.env.CLOUDSDK_ROOT_DIR ?? '/usr/lib/google-cloud-sdk';
const JAR = join(SDK_ROOT, 'platform', 'cloud-datastore-emulator', 'CloudDatastore.jar');
const START_TIMEOUT_MS = 60_000;

/** A running strict emulator: its client, and how to stop it. */
export interface StrictEmulator {
  datastore: Datastore;
  stop(): Promise<void>;
}

/** Starts the legacy emulator with `indexYaml` as its only indexes (beyond the built-in ones). */
export async function strictIndexEmulator(indexYaml: string): Promise<StrictEmulator> {
  const dir = mkdtempSync(join(tmpdir(), 'locker-strict-index-'));
  const indexFile = join(dir, 'index.yaml');
  writeFileSync(indexFile, indexYaml);
  const port = await freePort();
  const child = spawn('java', [
    '-Xmx256m', '-cp', JAR, 'com.google.cloud.datastore.emulator.CloudDatastore', 'start',
    '--host=127.0.0.1', `--port=${port}`, '--store_on_disk=false', '--consistency=1.0',
    '--require_indexes', `--index_file=${indexFile}`, join(dir, 'project'),
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  const keep = (chunk: Buffer) => { tail = (tail + chunk.toString()).slice(-4_000); };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await healthy(child, port, () => tail);
  } catch (error) {
    await stop();
    throw error;
  }
  return { datastore: new Datastore({ projectId: 'strict-index', apiEndpoint: `127.0.0.1:${port}` }), stop };
}

async function healthy(child: ChildProcess, port: number, tail: () => string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the strict emulator exited during start-up: ${tail()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(1_000) });
      if ((await res.text()).trim() === 'Ok') return;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the strict emulator did not answer within ${START_TIMEOUT_MS / 1000} s: ${tail()}`);
}
