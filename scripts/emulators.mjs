// Starts the real Datastore emulators (the legacy Cloud Datastore emulator and the Firestore
// emulator in Datastore mode) as plain JVMs on free loopback ports, health-checks them, and stops
// exactly the processes it started. Used by scripts/test.mjs and scripts/with-emulators.mjs. A
// third kind, the same Firestore emulator in Native mode (`firestoreNative`), is started only by
// the test files that ask for it (test/support/firestore-native.ts): not every lane pays its JVM.
import { spawn, execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';

const FALLBACK_SDK_ROOT = '/usr/lib/google-cloud-sdk';
const HEALTH_TIMEOUT_MS = 60_000;
const HEALTH_POLL_MS = 100;
const STOP_GRACE_MS = 5_000;
const TAIL_BYTES = 4_000;
/**
 * Each emulator's most heap (`-Xmx`). The emulators keep every entity in memory: `npm run bench`,
 * which writes over 100,000 entities into one emulator, sets `LOCKER_EMULATOR_HEAP=4g` (on 1g, with
 * a bug of its own adding load, its legacy emulator spent minutes in full GCs, then stopped answering).
 */
const HEAP = heapSize(process.env.LOCKER_EMULATOR_HEAP);

/** The Firestore emulator's JVM, which serves Datastore mode or Native mode by a flag. */
const FIRESTORE_JVM = {
  jar: 'platform/cloud-firestore-emulator/cloud-firestore-emulator.jar',
  mainClass: 'com.google.cloud.datastore.emulator.firestore.CloudFirestore',
  jvmFlags: ['-Duser.language=en'],
  install:
    'install the Google Cloud SDK component cloud-firestore-emulator ' +
    '(apt-get install google-cloud-cli-firestore-emulator, or gcloud components install cloud-firestore-emulator) and Java 17',
};

/** What each emulator needs: its jar under the SDK, its main class, its flags, how to install it. */
const EMULATORS = {
  datastore: {
    title: 'Datastore emulator',
    jar: 'platform/cloud-datastore-emulator/CloudDatastore.jar',
    mainClass: 'com.google.cloud.datastore.emulator.CloudDatastore',
    jvmFlags: [],
    flags: ['--store_on_disk=false', '--store_index_configuration_on_disk=false', '--consistency=1.0'],
    install:
      'install the Google Cloud SDK component cloud-datastore-emulator ' +
      '(apt-get install google-cloud-cli-datastore-emulator, or gcloud components install cloud-datastore-emulator) and Java 17',
  },
  firestore: { ...FIRESTORE_JVM, title: 'Firestore emulator', flags: ['--database-mode=datastore-mode'] },
  // Native mode is the emulator's default (`--help`: CLOUD_FIRESTORE); said here so it never drifts.
  firestoreNative: { ...FIRESTORE_JVM, title: 'Firestore emulator in Native mode', flags: ['--database-mode=firestore-native'] },
};

/** Processes started by this module and not yet stopped, stopped again on exit and on signals. */
const running = new Set();

/**
 * Starts the named emulators in parallel and resolves once each answers its health check.
 * @param {Array<'datastore' | 'firestore' | 'firestoreNative'>} names
 * @returns {Promise<{ datastore?: { host: string, pid: number }, firestore?: { host: string, pid: number }, firestoreNative?: { host: string, pid: number }, stop(): Promise<void> }>}
 */
export async function startEmulators(names) {
  for (const name of names) {
    if (!(name in EMULATORS)) throw new Error(`unknown emulator "${name}": use datastore, firestore or firestoreNative`);
  }
  const sdkRoot = await findSdkRoot();
  const plans = names.map((name) => ({ name, ...EMULATORS[name], jarPath: join(sdkRoot, EMULATORS[name].jar) }));
  for (const plan of plans) checkInstalled(plan);
  installExitHandlers();

  const started = await Promise.allSettled(plans.map((plan) => startOne(plan)));
  const children = started.filter((r) => r.status === 'fulfilled').map((r) => r.value);
  const stop = () => Promise.all(children.map((child) => stopChild(child))).then(() => undefined);
  const failure = started.find((r) => r.status === 'rejected');
  if (failure) {
    await stop();
    throw failure.reason;
  }
  const result = { stop };
  for (const child of children) result[child.name] = { host: child.host, pid: child.process.pid };
  return result;
}

/** The environment a test or benchmark needs to reach the emulators. */
export function emulatorEnv(emulators) {
  const env = { DATASTORE_PROJECT_ID: 'locker-test', METADATA_SERVER_DETECTION: 'none' };
  if (emulators.datastore) env.DATASTORE_EMULATOR_HOST = emulators.datastore.host;
  if (emulators.firestore) env.LOCKER_FIRESTORE_EMULATOR_HOST = emulators.firestore.host;
  return env;
}

/**
 * Starts both emulators, runs `command args` with their environment and stdio inherited, always
 * stops the emulators, and resolves with the command's exit code.
 */
export async function runWithEmulators(command, args) {
  const emulators = await startEmulators(['datastore', 'firestore']);
  try {
    const env = { ...process.env, ...emulatorEnv(emulators) };
    return await runCommand(command, args, env);
  } finally {
    await emulators.stop();
  }
}

/**
 * Runs a command with inherited stdio, forwarding SIGINT/SIGTERM to it; resolves with its exit code
 * (1 when killed by a signal).
 */
export function runCommand(command, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit', env });
    const forward = (signal) => child.kill(signal);
    process.on('SIGINT', forward).on('SIGTERM', forward);
    const done = () => process.off('SIGINT', forward).off('SIGTERM', forward);
    child.once('error', (err) => {
      done();
      reject(err);
    });
    child.once('exit', (code, signal) => {
      done();
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

async function findSdkRoot() {
  const printed = await new Promise((resolve) => {
    execFile('gcloud', ['info', '--format=value(installation.sdk_root)'], { timeout: 30_000 }, (err, stdout) =>
      resolve(err ? '' : stdout.trim()),
    );
  });
  return printed || FALLBACK_SDK_ROOT;
}

function checkInstalled(plan) {
  if (!onPath('java')) {
    throw new Error(`the ${plan.title} needs Java 17 but \`java\` is not on PATH: install Java 17 (apt-get install openjdk-17-jre-headless)`);
  }
  if (!existsSync(plan.jarPath)) {
    throw new Error(`the ${plan.title} was not found (no ${plan.jarPath}): ${plan.install}`);
  }
}

function onPath(program) {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir && existsSync(join(dir, program)));
}

/** How often an emulator is started again on another port when the one it was given was taken meanwhile. */
const BIND_RETRIES = 3;

/**
 * Starts one emulator. The port is free when picked but bound a moment later, by the JVM; when
 * something took it in between (the other emulator's own side ports, a test's client sockets),
 * the emulator exits with a BindException, and it is started again on another port.
 */
async function startOne(plan) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnPort(plan, await freePort());
    } catch (err) {
      if (!(err instanceof PortTakenError) || attempt > BIND_RETRIES) throw err;
      console.error(`${plan.title}: its port was taken before it bound it; starting it again on another port`);
    }
  }
}

/** The `-Xmx` value: `1g` unless `LOCKER_EMULATOR_HEAP` gives a size such as `4g` or `2048m`. */
function heapSize(raw) {
  if (raw === undefined || raw === '') return '1g';
  if (!/^[1-9][0-9]*[mg]$/.test(raw)) throw new Error(`LOCKER_EMULATOR_HEAP must be a size such as 4g or 2048m; got ${JSON.stringify(raw)}`);
  return raw;
}

/** An emulator that exited during start-up because its port was in use. */
class PortTakenError extends Error {}

async function startOnPort(plan, port) {
  const args = [
    `-Xmx${HEAP}`,
    ...plan.jvmFlags,
    '-cp',
    plan.jarPath,
    plan.mainClass,
    'start',
    '--host=127.0.0.1',
    `--port=${port}`,
    ...plan.flags,
  ];
  const proc = spawn('java', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const child = { name: plan.name, title: plan.title, host: `127.0.0.1:${port}`, process: proc, tail: '', exited: undefined };
  child.exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  child.exited.then(() => running.delete(child));
  const keepTail = (chunk) => {
    child.tail = (child.tail + chunk.toString()).slice(-TAIL_BYTES);
  };
  proc.stdout.on('data', keepTail);
  proc.stderr.on('data', keepTail);
  running.add(child);
  try {
    await waitHealthy(child, port);
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  return child;
}

/** A port that was free on 127.0.0.1 a moment ago (the emulator binds it right after). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitHealthy(child, port) {
  const deadline = Date.now() + HEALTH_TIMEOUT_MS;
  let gone;
  child.exited.then((how) => {
    gone = how;
  });
  while (Date.now() < deadline) {
    if (gone) {
      const Failure = /Address already in use|BindException/.test(child.tail) ? PortTakenError : Error;
      throw new Failure(
        `the ${child.title} exited during start-up (code ${gone.code}, signal ${gone.signal}); its output ended with:\n${child.tail}`,
      );
    }
    if (await answersOk(port)) return;
    await new Promise((resolve) => setTimeout(resolve, HEALTH_POLL_MS));
  }
  throw new Error(
    `the ${child.title} did not answer "Ok" on http://${child.host}/ within ${HEALTH_TIMEOUT_MS / 1000} s; its output ended with:\n${child.tail}`,
  );
}

async function answersOk(port) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(1_000) });
    return (await res.text()).trim() === 'Ok';
  } catch {
    return false;
  }
}

/** Stops one emulator JVM: SIGTERM, then SIGKILL after a grace period; resolves once it exited. */
async function stopChild(child) {
  if (!running.has(child)) return;
  child.process.kill('SIGTERM');
  let timer;
  const graceOver = new Promise((resolve) => {
    timer = setTimeout(() => resolve('timeout'), STOP_GRACE_MS);
  });
  const first = await Promise.race([child.exited, graceOver]);
  clearTimeout(timer);
  if (first === 'timeout') {
    child.process.kill('SIGKILL');
    await child.exited;
  }
}

let handlersInstalled = false;

/** Makes sure no emulator outlives this process, whether it exits normally or by a signal. */
function installExitHandlers() {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.once('exit', () => {
    for (const child of running) child.process.kill('SIGKILL');
  });
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      Promise.all([...running].map((child) => stopChild(child))).finally(() => {
        process.exit(signal === 'SIGINT' ? 130 : 143);
      });
    });
  }
}
