/**
 * The status page at scale: the overview (`GET /` of `locker.statusRouter()`) over 10,000 and
 * 100,000 chains of one kind (2 % failed, 10 % live, half of those with no progress for
 * `stallAfter`, the rest complete), on the in-memory store, the Firestore emulator in Datastore mode
 * (which answers counts by aggregation) and the legacy Datastore emulator (which does not).
 * Reported: the store calls one overview makes (the port's calls, counted by a wrapper: they must
 * be the same count at both sizes), and its render time as a ratio to one keys-only query of 300
 * keys on the same store and data (the cost of one store round trip that reads a page), medians of
 * five after one warm-up.
 */
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Key, type Datastore } from '@google-cloud/datastore';
import { DatastoreStore, Locker, MemoryStore } from './library';
import type { Properties, Store } from '../src/types';
import { UNINDEXED_LOCK_FIELDS } from '../src/rules/lock-fields';
import { percentile } from './stats';
import { countingStore } from '../test/support/counting-store';

const KIND = 'BenchOrder';
const MIN = 60_000;
const RUNS = 5;
/** Keys the baseline query reads: one batch (the legacy emulator answers at most 300 keys a batch). */
const KEYS_READ = 300;
/**
 * The deadline of each store call on the emulator. The default (5 s) is the production one; the
 * legacy emulator, which reads a query's entities without a real index, passes it under load at
 * 10,000 chains (measured: the overview answered 503, DEADLINE_EXCEEDED), and a bench that stops
 * measures nothing: it is given longer, and its render times say how slow it is.
 */
const EMULATOR_CALL_TIMEOUT_MS = 120_000;

/** One store at one size. */
export interface ConsoleRow {
  store: string;
  chains: number;
  /** Store calls of one overview. */
  calls: number;
  /** Those calls per method (`read ×1, …`). */
  callsByMethod: string;
  renderMs: number;
  keysOnlyMs: number;
  /** renderMs ÷ keysOnlyMs. */
  ratio: number;
}

/** The part's figures. */
export interface ConsoleReport {
  rows: ConsoleRow[];
}

/** Measures the overview on each store at each size. */
export async function measureConsole(emulators: ReadonlyArray<{ name: string; datastore: Datastore }>, sizes: readonly number[], progress: (text: string) => void): Promise<ConsoleReport> {
  const rows: ConsoleRow[] = [];
  for (const chains of sizes) {
    progress(`the overview over ${chains.toLocaleString('en-US')} chains in memory`);
    const memory = new MemoryStore({ projectId: 'bench-console' });
    await seedMemory(memory, chains);
    rows.push(await measure('in-memory store', memory, '', chains));
    for (const { name, datastore } of emulators) {
      const namespace = `console-${chains}-${process.pid}-${Date.now().toString(36)}`;
      progress(`the overview over ${chains.toLocaleString('en-US')} chains on the ${name} (seeding)`);
      await seedDatastore(datastore, namespace, chains);
      rows.push(await measure(name, new DatastoreStore(datastore, { namespaces: [namespace], callTimeoutMs: EMULATOR_CALL_TIMEOUT_MS }), namespace, chains));
    }
  }
  return { rows };
}

// Waiting chains are written 30 min or 2 min ago: none stands inside the lease's minute, where the
// Running list would read its pages to find no attempt holding them (a cost of the data's ages, not its size).
/** The lock fields of chain `i` (its state by the mix above; `lock_ts` in the order written). */
function lockOf(i: number, now: number): Properties {
  const base = { lock_req: '', lock_seq: 2, lock_try: 0, lock_chain: `c${i}`, lock_task: `t${i}`, total: i };
  if (i % 50 === 0) return { ...base, lock_state: 'failed', lock_try: 3, lock_err: 'Error: declined', lock_ts: new Date(now - 3 * 60 * MIN + i) };
  if (i % 10 === 1) return { ...base, lock_state: 'scheduled', lock_ts: new Date(now - (i % 20 === 1 ? 30 * MIN : 2 * MIN) + (i % 1000)) };
  return { ...base, lock_state: 'complete', lock_ts: new Date(now - 2 * 60 * MIN + i) };
}

async function seedMemory(store: MemoryStore, chains: number): Promise<void> {
  const now = Date.now();
  await store.transaction(async (tx) => {
    for (let i = 0; i < chains; i++) tx.put(new Key({ path: [KIND, `o${i}`] }), lockOf(i, now), UNINDEXED_LOCK_FIELDS);
  });
}

async function seedDatastore(datastore: Datastore, namespace: string, chains: number): Promise<void> {
  const now = Date.now();
  const batches: Array<Array<{ key: Key; data: Properties; excludeFromIndexes: string[] }>> = [];
  for (let start = 0; start < chains; start += 500) {
    batches.push(Array.from({ length: Math.min(500, chains - start) }, (_, j) => ({
      key: datastore.key({ namespace, path: [KIND, `o${start + j}`] }), data: lockOf(start + j, now), excludeFromIndexes: [...UNINDEXED_LOCK_FIELDS],
    })));
  }
  for (let i = 0; i < batches.length; i += 8) await Promise.all(batches.slice(i, i + 8).map((b) => datastore.save(b)));
}

async function measure(name: string, inner: Store, namespace: string, chains: number): Promise<ConsoleRow> {
  const counted = countingStore(inner);
  const store = counted.store;
  const locker = new Locker({ store, authenticate: false, logger: { info() {}, warn() {}, error(message, fields) { console.error(`bench: the locker logged: ${message}`, JSON.stringify(fields ?? {}).slice(0, 600)); } }, stallAfter: 5 * MIN });
  const app = express();
  app.use(locker.statusRouter({ authenticate: () => ({ ok: true }), kinds: [KIND], namespaces: [namespace] }));
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  try {
    await overview(port); // warm-up
    counted.reset();
    await overview(port);
    const overviewCalls = counted.calls;
    const callsByMethod = counted.summary();
    const render: number[] = [];
    const keysOnly: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      let t = performance.now();
      await overview(port);
      render.push(performance.now() - t);
      t = performance.now();
      const keys = await inner.findKeys!({ kind: KIND, namespace, property: 'lock_state', equals: 'complete', limit: KEYS_READ });
      keysOnly.push(performance.now() - t);
      if (keys.length !== KEYS_READ) throw new Error(`the keys-only query found ${keys.length} keys, not ${KEYS_READ}`);
    }
    const renderMs = percentile(render, 50);
    const keysOnlyMs = percentile(keysOnly, 50);
    return { store: name, chains, calls: overviewCalls, callsByMethod, renderMs, keysOnlyMs, ratio: renderMs / keysOnlyMs };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await locker.shutdown();
  }
}

function overview(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        if (res.statusCode === 200 && body.length > 0) resolve();
        else reject(new Error(`the overview answered ${res.statusCode}: ${body.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').slice(0, 400)}`));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The part's lines of the report. */
export function consoleLines(r: ConsoleReport): string[] {
  const lines = ['The status page\'s overview (GET /), store calls and render time ÷ one keys-only query of 300 keys:'];
  for (const row of r.rows) {
    lines.push(`  ${row.store}, ${row.chains.toLocaleString('en-US')} chains: ${row.calls} store calls; ${row.renderMs.toFixed(1)} ms, ${row.ratio.toFixed(2)} × the keys-only query (${row.keysOnlyMs.toFixed(1)} ms)`);
  }
  const byStore = new Map<string, ConsoleRow[]>();
  for (const row of r.rows) byStore.set(row.store, [...(byStore.get(row.store) ?? []), row]);
  for (const [store, rows] of byStore) {
    // Bounded, not constant: a list reads up to four pages until it holds a page of steps in its
    // state, so how many it reads depends on where the states lie in the index, not on their number.
    const sameCalls = rows.every((row) => row.calls === rows[0]!.calls);
    const grew = rows.at(-1)!.calls > rows[0]!.calls;
    const verdict = sameCalls ? 'the same store calls at every size' : grew ? 'STORE CALLS GREW WITH THE CHAINS' : 'no more store calls at the largest size than at the smallest';
    lines.push(`  ${store}: ${verdict}${sameCalls ? '' : ` (${rows.map((row) => `${row.chains.toLocaleString('en-US')}: ${row.callsByMethod}`).join('; ')})`}`);
  }
  return lines;
}

/** The part's figures for the JSON line. */
export function consoleJson(r: ConsoleReport): Record<string, unknown> {
  return { console: r.rows.map((row) => ({ ...row, renderMs: Number(row.renderMs.toFixed(2)), keysOnlyMs: Number(row.keysOnlyMs.toFixed(2)), ratio: Number(row.ratio.toFixed(3)) })) };
}
