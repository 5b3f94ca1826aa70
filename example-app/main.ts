/**
 * The example app: `npm start` (or `node --import tsx example-app/main.ts`).
 *
 * Reads its configuration from the environment (see config.ts and app.yaml), listens on PORT
 * (8080; 0 picks a free port), prints its URL and one line per step, starts one counter chain
 * and one order chain (unless EXAMPLE_AUTOSTART=0), and shuts down cleanly on SIGTERM/SIGINT. A
 * configuration error is one line on stderr and exit code 2.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { ConfigError, type Locker } from '../src/index';
import { createApp } from './app';
import { createChains } from './chains';
import { readConfig, type ExampleConfig } from './config';
import { Records } from './records';
import { readStatus } from './status';
import { buildParts, type Parts } from './wiring';

/** Exit code of a configuration error. */
const EXIT_CONFIG = 2;
/** Exit code of any other failure to start or stop. */
const EXIT_FAILURE = 1;
/** How long a shutdown may take before the process exits anyway, ms. */
const SHUTDOWN_LIMIT_MS = 10_000;

const say = (line: string): void => console.log(line);

async function main(): Promise<void> {
  let config: ExampleConfig;
  let parts: Parts;
  let baseUrl = '';
  try {
    config = readConfig(process.env);
    parts = buildParts(config, () => baseUrl);
  } catch (error) {
    fail(error);
  }
  const records = new Records(parts.store, parts.keys, parts.namespace);
  const chains = createChains({ locker: parts.locker, queue: parts.queue, records, say });
  let unfinished: string[] = [];
  const app = createApp({
    locker: parts.locker, chains, records, appEngine: config.appEngine, operator: config.operator, sweepAuthenticate: parts.sweepAuthenticate,
    localSweep: config.queue.type === 'local', unfinishedAtStart: () => unfinished, say,
  });

  await parts.store.init?.();
  await parts.queue.init?.();
  const server = app.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  baseUrl = ownUrl(config.host, (server.address() as AddressInfo).port);
  say(`running on ${parts.description}`);
  unfinished = await reportUnfinished(parts.locker, records, config);
  parts.startSweeping(); // after the listing: no chain an earlier run left moves while it is read

  say(`datastore-locker example listening on ${baseUrl}/`);

  process.once('SIGTERM', () => void stop(server, parts, 'SIGTERM'));
  process.once('SIGINT', () => void stop(server, parts, 'SIGINT'));

  if (config.autostart) {
    await Promise.all([chains.startCounter(), chains.startOrder()]).catch((error: unknown) => {
      say(`could not start the demo chains: ${error instanceof Error ? error.message : String(error)}`);
    });
  }
}

/**
 * Lists the chains an earlier run left scheduled or running (after a crash or a restart: the
 * local dispatcher kept their tasks in memory only). The sweep re-delivers each once it stalled.
 */
async function reportUnfinished(locker: Locker, records: Records, config: ExampleConfig): Promise<string[]> {
  try {
    const { chains } = await readStatus(locker, records);
    const open = chains.filter((c) => c.state === 'scheduled' || c.state === 'running' || c.state === 'stale' || c.state === 'stalled');
    if (open.length === 0) return [];
    const within = config.queue.type === 'local'
      ? `about ${Math.ceil((config.stallAfterMs + config.queue.sweepIntervalMs) / 1000)} s (stallAfter + one sweep interval)`
      : 'about stallAfter plus one scheduled sweep';
    say(`found ${open.length} unfinished chain(s) from an earlier run; the sweep re-delivers their stalled steps within ${within}:`);
    for (const c of open) say(`  ${c.key} at step ${c.seq} (${c.state})`);
    return open.map((c) => c.key);
  } catch (error) {
    say(`could not list unfinished chains: ${error instanceof Error ? error.message : String(error)}`);
    return [];
  }
}

/** The URL the app reaches itself at (the local dispatcher sends its tasks there). */
function ownUrl(host: string, port: number): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return `http://127.0.0.1:${port}`;
  return host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}`;
}

/**
 * On SIGTERM (Cloud Run and App Engine send it about 10 s before SIGKILL): shuts the Locker down
 * first, while the server still answers (a task that arrives meanwhile is refused with 503 and
 * retried elsewhere), then the queue and the clients, then closes the HTTP server and exits.
 */
async function stop(server: Server, parts: Parts, signal: string): Promise<void> {
  say(`${signal} received: shutting down`);
  setTimeout(() => {
    console.error(`shutdown took longer than ${SHUTDOWN_LIMIT_MS} ms; exiting anyway`);
    process.exit(EXIT_FAILURE);
  }, SHUTDOWN_LIMIT_MS).unref();
  try {
    await parts.shutdown();
  } catch (error) {
    console.error(`shutdown failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = EXIT_FAILURE;
  }
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  await closed;
  say('datastore-locker example stopped');
  process.exit();
}

/** Prints a startup failure as one line, without a stack trace, and exits. */
function fail(error: unknown): never {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof ConfigError) {
    console.error(`configuration error: ${message}`);
    process.exitCode = EXIT_CONFIG;
  } else {
    console.error(`datastore-locker example failed to start: ${message}`);
    process.exitCode = EXIT_FAILURE;
  }
  process.exit();
}

main().catch(fail);
