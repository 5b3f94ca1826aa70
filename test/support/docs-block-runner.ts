/**
 * Runs one documented example as a program, in a child process, and says what became of it. The
 * docs test (test/docs/docs.examples.test.ts) copies the block into a file whose imports of the library
 * and of `@google-cloud/tasks` point at the source and at test/support/docs-tasks-client.ts, then
 * starts this runner with the file in DOCS_BLOCK. Everything else the example needs comes from the
 * environment, as on a deployment: DATASTORE_EMULATOR_HOST for `new Datastore()`, PORT,
 * GOOGLE_CLOUD_PROJECT, SMTP_URL, CLOUD_TASKS_TEST_PORT for the loopback Cloud Tasks server.
 *
 * The platform's network is modelled in one place: a server the example starts with a port and no
 * host (`app.listen(port)`) listens on 127.0.0.1, since the tests serve on loopback only.
 *
 * It prints one line `DOCS-RUN {json}` once the file has loaded: the names it exports and what
 * each is (`Locker` for a Locker), or the error loading it threw (then exit code 3). With
 * DOCS_PROBE it then does what the example offers to a caller and prints `DOCS-PROBE {json}`:
 * `{"schedule":"locker","path":"/probe"}` starts a chain on the exported Locker `locker`;
 * `{"call":"kickoff","args":["x"]}` calls the exported function and prints what it resolved to;
 * `{"tick":"locker"}` runs a tick of the exported Locker's recurring work;
 * `{"runNow":"locker","name":"poll-feed","id":"x"}` runs its schedule now, once per id.
 */
import net from 'node:net';
import { Datastore } from '@google-cloud/datastore';
import { Locker } from '../../src/index';

type Listen = (...args: unknown[]) => net.Server;
const listen = net.Server.prototype.listen as Listen;
net.Server.prototype.listen = function loopbackListen(this: net.Server, ...args: unknown[]): net.Server {
  const [port, next] = args;
  if ((typeof port === 'number' || typeof port === 'string') && (next === undefined || typeof next === 'function')) {
    return listen.call(this, Number(port), '127.0.0.1', ...args.slice(1));
  }
  return listen.apply(this, args);
} as typeof net.Server.prototype.listen;

/** One line the parent reads. */
function report(tag: 'DOCS-RUN' | 'DOCS-PROBE', value: unknown): void {
  process.stdout.write(`${tag} ${JSON.stringify(value)}\n`);
}

function describeExport(value: unknown): string {
  if (value instanceof Locker) return 'Locker';
  return typeof value;
}

interface Probe {
  schedule?: string;
  path?: string;
  tick?: string;
  runNow?: string;
  name?: string;
  id?: string;
  call?: string;
  args?: unknown[];
}

async function probe(exports: Record<string, unknown>, plan: Probe): Promise<unknown> {
  if (plan.schedule !== undefined) {
    const locker = exports[plan.schedule];
    if (!(locker instanceof Locker)) throw new Error(`the example exports no Locker named ${plan.schedule}`);
    const key = new Datastore().key(['DocsProbe', `probe-${process.pid}-${Date.now()}`]);
    return locker.schedule(key, { probe: true }, plan.path ?? '/probe');
  }
  if (plan.tick !== undefined || plan.runNow !== undefined) {
    const locker = exports[(plan.tick ?? plan.runNow)!];
    if (!(locker instanceof Locker)) throw new Error(`the example exports no Locker named ${String(plan.tick ?? plan.runNow)}`);
    return plan.tick !== undefined ? locker.tick() : locker.runScheduleNow(plan.name ?? '', plan.id);
  }
  if (plan.call !== undefined) {
    const fn = exports[plan.call];
    if (typeof fn !== 'function') throw new Error(`the example exports no function named ${plan.call}`);
    return (fn as (...args: unknown[]) => unknown)(...(plan.args ?? []));
  }
  throw new Error(`unknown probe ${JSON.stringify(plan)}`);
}

const file = process.env.DOCS_BLOCK;
if (!file) throw new Error('DOCS_BLOCK names the example file to run');
let loaded: Record<string, unknown>;
try {
  loaded = require(file) as Record<string, unknown>;
} catch (error) {
  const e = error instanceof Error ? { name: error.name, message: error.message } : { name: 'thrown', message: String(error) };
  report('DOCS-RUN', { loaded: false, error: e });
  process.exit(3);
}
report('DOCS-RUN', { loaded: true, exports: Object.fromEntries(Object.entries(loaded).map(([name, value]) => [name, describeExport(value)])) });
if (process.env.DOCS_PROBE) {
  probe(loaded, JSON.parse(process.env.DOCS_PROBE) as Probe).then(
    (value) => report('DOCS-PROBE', { ok: true, value }),
    (error: unknown) => report('DOCS-PROBE', { ok: false, error: String(error) }),
  );
}
