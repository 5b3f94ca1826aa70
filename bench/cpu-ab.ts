/**
 * Node CPU per chained step, two builds against each other in one process (`npm run bench` compares
 * a step with its limits; this compares a change with the code before it). Each build's
 * `dist/index.js` is loaded side by side; rounds alternate which goes first. A round schedules N
 * one-step chains on a `MemoryStore` (a queue that records the tasks), then delivers every task over
 * loopback HTTP, 16 at once, and measures `process.cpuUsage()` across the deliveries only: the
 * library, Express and HTTP, no store client. Prints µs per step per round and the medians' ratio.
 *
 *   git worktree add --detach /tmp/before <commit> && (cd /tmp/before && npm ci && npm run build)
 *   npm run build && BUILD_A=/tmp/before BUILD_B=. npx tsx bench/cpu-ab.ts     (N=3000 ROUNDS=8)
 */
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import express from 'express';
import { Key } from '@google-cloud/datastore';
import type { Queue, TaskRequest } from '../src/types';

type Lib = typeof import('../src/index');
const load = (dir: string | undefined): Lib => {
  if (!dir) throw new Error('BUILD_A and BUILD_B name the two checkouts (each built: dist/index.js)');
  return require(resolve(dir, 'dist', 'index.js')) as Lib;
};
const builds: Array<[string, Lib]> = [['before', load(process.env.BUILD_A)], ['after', load(process.env.BUILD_B)]];
const N = Number(process.env.N ?? 3000);
const ROUNDS = Number(process.env.ROUNDS ?? 6);
const CONC = 16;
const silent = { info() {}, warn() {}, error() {} };

async function round(name: string, lib: Lib, r: number): Promise<number> {
  const tasks: TaskRequest[] = [];
  const queue: Queue = { async enqueue(t) { tasks.push(t); } };
  const store = new lib.MemoryStore({ projectId: 'ab' });
  const locker = new lib.Locker({ store, queue, authenticate: false, logger: silent });
  const app = express();
  app.post('/task', locker.handle<{ n: number }>((ctx) => { ctx.entity.n += 1; }, (p) => ({ n: typeof p.n === 'number' ? p.n : 0 })));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((res) => server.once('listening', res));
  const port = (server.address() as AddressInfo).port;
  for (let i = 0; i < N; i++) await locker.schedule(new Key({ path: ['AB', `${name}-${r}-${i}`] }), { n: 0 }, '/task', { i });
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const send = (t: typeof tasks[number]) => new Promise<number>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: t.path, method: 'POST', agent, headers: { ...t.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(t.body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(t.body);
  });
  let next = 0;
  const cpu0 = process.cpuUsage();
  const statuses: number[] = [];
  await Promise.all(Array.from({ length: CONC }, async () => {
    while (next < tasks.length) statuses.push(await send(tasks[next++]!));
  }));
  const cpu = process.cpuUsage(cpu0);
  if (statuses.some((s) => s !== 200)) throw new Error(`${name}: statuses ${[...new Set(statuses)].join(',')}`);
  agent.destroy();
  server.closeAllConnections();
  await new Promise((res) => server.close(res));
  await locker.shutdown();
  return (cpu.user + cpu.system) / tasks.length;
}

async function main(): Promise<void> {
  const results: Record<string, number[]> = { before: [], after: [] };
  for (const [name, lib] of builds) await round(name, lib, -1); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? builds : [...builds].reverse();
    for (const [name, lib] of order) {
      const us = await round(name, lib, r);
      results[name]!.push(us);
      console.log(`round ${r} ${name}: ${us.toFixed(1)} µs CPU per step`);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(JSON.stringify({ n: N, rounds: ROUNDS, before: median(results.before!), after: median(results.after!), ratio: median(results.after!) / median(results.before!) }));
}
void main();
