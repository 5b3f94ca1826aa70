// The platform's stop, modelled: a child process running an app whose SIGTERM is wired to
// locker.shutdown() and then to closing its server gets SIGTERM while a handler runs, and SIGKILL
// after a grace if it is still alive (Cloud Run: 10 s). A task arriving meanwhile is answered 503
// and runs elsewhere; the running step's lease is handed back before the kill.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Key } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import { readLock } from '../../src/rules/lock-fields';
import { StepState } from '../../src/types';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { keys, taskApp, TEST_TOKEN } from '../support/task-app';

const ROOT = path.resolve(__dirname, '..', '..');
/** The platform's grace between SIGTERM and SIGKILL in this test, ms (shutdown takes 2 s of it). */
const GRACE_MS = 6_000;

let store: DatastoreStore;
let namespace: string;
let n = 0;
before(() => {
  namespace = uniqueNamespace('sigterm');
  store = new DatastoreStore(legacyDatastore(), { namespaces: [namespace] });
});

const newKey = (): Key => keys.key({ namespace, path: ['Counter', `t${++n}-${Date.now()}`] });
async function seed(key: Key): Promise<void> {
  await store.transaction(async (tx) => {
    tx.put(key, { count: 1, lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled, lock_chain: 'c1' }, []);
  });
}

interface App { child: ChildProcess; url: string; printed(text: string): Promise<string>; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> }

async function start(handler: 'cooperative' | 'stubborn'): Promise<App> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/shutdown-app.ts'], {
    cwd: ROOT, env: { ...process.env, NAMESPACE: namespace, HANDLER: handler, SHUTDOWN_MS: '2000' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiting = new Set<() => void>();
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { out += chunk; for (const w of waiting) w(); });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { err += chunk; });
  // On 'close': after the last of the app's output was read ('exit' may come before it).
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const printed = (text: string): Promise<string> => new Promise((resolve, reject) => {
    const look = (): void => {
      const line = out.split('\n').find((l) => l.includes(text));
      if (line !== undefined) { waiting.delete(look); resolve(line); }
    };
    waiting.add(look);
    void exited.then(() => { waiting.delete(look); reject(new Error(`the app exited before printing "${text}"\n${out}\n${err}`)); });
    look();
  });
  const url = (await printed('listening on')).split(' ').pop()!;
  return { child, url, printed, exited };
}

/** SIGTERM now, SIGKILL after the grace if the process is still alive (as the platform does). */
function terminate(app: App): void {
  process.kill(app.child.pid!, 'SIGTERM');
  const killer = setTimeout(() => { if (app.child.exitCode === null && app.child.signalCode === null) process.kill(app.child.pid!, 'SIGKILL'); }, GRACE_MS);
  void app.exited.then(() => clearTimeout(killer));
}

async function post(app: App, encodedKey: string): Promise<number> {
  const res = await fetch(`${app.url}/task`, { method: 'POST', headers: { 'x-test-auth': TEST_TOKEN, 'x-lock-key': encodedKey, 'x-lock-seq': '1' } });
  await res.text();
  return res.status;
}

describe('SIGTERM while a handler runs, SIGKILL after a grace', () => {
  it('a handler that stops on its signal: 503 to a new task, the lease handed back silently, the process exits before the kill, and the step runs at once elsewhere', async () => {
    const other = taskApp(store);
    const running = newKey();
    const arriving = newKey();
    await seed(running);
    await seed(arriving);
    const app = await start('cooperative');
    const answer = post(app, other.locker.encodeKey(running));
    await app.printed('handler started');
    terminate(app);
    await app.printed('stopping');
    assert.equal(await post(app, other.locker.encodeKey(arriving)), 503, 'a task arriving while it drains');
    assert.equal(await answer, 503, 'the running task, handed back');
    assert.deepEqual(await app.exited, { code: 0, signal: null }, 'it exited by itself, inside the grace');
    const lock = readLock((await store.get(running))!);
    assert.deepEqual([lock.req, lock.tries], ['', 0]);

    assert.equal((await other.send(running, 1)).status, 200);
    assert.equal((await other.send(arriving, 1)).status, 200);
    assert.deepEqual(other.events.map((e) => e.name), ['acquired', 'completed', 'acquired', 'completed']);
    assert.deepEqual(other.alerts, []);
  });

  it('a handler deaf to its signal: the lease written stale before the kill; the process is SIGKILLed; the next delivery overwrites it with an alert naming the attempt', async () => {
    const other = taskApp(store);
    const running = newKey();
    await seed(running);
    const app = await start('stubborn');
    const answer = post(app, other.locker.encodeKey(running));
    const attempt = (await app.printed('handler started')).split(' ').pop()!;
    terminate(app);
    assert.equal(await answer, 503);
    await app.printed('closed');
    assert.deepEqual(await app.exited, { code: null, signal: 'SIGKILL' }, 'its handler kept it alive until the kill');
    const lock = readLock((await store.get(running))!);
    assert.equal(lock.req, attempt);

    assert.equal((await other.send(running, 1)).status, 200, 'run at once, not refused as held');
    assert.deepEqual(other.events.map((e) => e.name), ['overwritten', 'completed']);
    assert.equal(other.alerts.length, 1);
    assert.equal(other.alerts[0]!.previousAttempt, attempt);
  });
});
