/**
 * docs/reference/costs.md states what each kind of step costs in Datastore RPCs and Cloud Tasks
 * CreateTask calls. This test counts them: a `DatastoreStore` with its generated client recorded
 * (test/support/datastore-spy.ts), a queue that keeps the tasks it is asked to create, each task
 * delivered as Cloud Tasks would. It runs on both emulators, since they stand for the two ways the
 * store talks to a backend: the legacy Datastore emulator honours `baseVersion` and transactions
 * begun by a read (a compare-and-swap is one commit), the Firestore emulator honours neither (a
 * compare-and-swap is a transaction). Each row of the page's table is the counts measured here.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Datastore } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import { PermanentError } from '../../src/errors/errors';
import { firestoreDatastore, legacyDatastore, uniqueNamespace } from '../support/emulator';
import { spyClient, type SpiedClient } from '../support/datastore-spy';
import { KeptTasks, deliver } from '../support/kept-tasks';
import { Counter, keys, taskApp, type TaskApp } from '../support/task-app';

const PAGE = join(__dirname, '..', '..', 'docs', 'reference', 'costs.md');

/** The two backends, by the column of the page's table they fill. */
const BACKENDS = [
  { column: 'conditional', env: 'DATASTORE_EMULATOR_HOST', client: legacyDatastore },
  { column: 'transactions', env: 'LOCKER_FIRESTORE_EMULATOR_HOST', client: firestoreDatastore },
] as const;
type Column = (typeof BACKENDS)[number]['column'];

/** One row of the page's measured table. */
type Row = Record<Column, string> & { tasks: number };

/** The rows of the page's measured table, by scenario. */
function documented(): Map<string, Row> {
  const text = readFileSync(PAGE, 'utf8');
  const table = text.split('<!-- costs: measured by test/docs/docs.costs.test.ts -->')[1]?.split('\n\n')[0];
  assert.ok(table, 'the page has the measured table');
  const rows = new Map<string, Row>();
  for (const line of table.trim().split('\n').slice(2)) {
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    const id = /`([a-z-]+)`/.exec(cells[0]!)?.[1];
    assert.ok(id, `a row names its scenario: ${line}`);
    rows.set(id, { conditional: cells[1]!, transactions: cells[2]!, tasks: Number(cells[3]) });
  }
  return rows;
}

/** `lookup, commit` as the page writes it: counts per method, in the order first sent. */
function summary(rpcs: string[]): string {
  if (rpcs.length === 0) return 'none';
  const counts = new Map<string, number>();
  for (const m of rpcs) counts.set(m, (counts.get(m) ?? 0) + 1);
  return [...counts].map(([m, n]) => (n === 1 ? m : `${n} × ${m}`)).join(', ');
}

const measured = new Map<string, Partial<Row>>();

for (const backend of BACKENDS) {
  describe(`what a step costs on the ${backend.column === 'conditional' ? 'legacy Datastore' : 'Firestore'} emulator`, { skip: process.env[backend.env] ? false : `${backend.env} is not set (npm test starts the emulators)` }, () => {
    let datastore: Datastore;
    const spies: SpiedClient[] = [];

    before(() => {
      datastore = backend.client();
    });
    after(async () => {
      for (const spy of spies) await spy.close();
    });

    /** A Locker on a recorded store in `namespace`, its backend check done (by a kickoff of its own). */
    async function instance(namespace: string, queue: KeptTasks, options: Parameters<typeof taskApp>[1] = {}): Promise<{ t: TaskApp; spy: SpiedClient }> {
      const spy = spyClient(datastore, { keepRequests: false });
      spies.push(spy);
      const store = new DatastoreStore(datastore, { namespaces: [namespace], client: spy.client, logger: { info() {}, warn() {}, error() {} } });
      const t = taskApp(store, { queue, ...options });
      await t.locker.schedule(keys.key({ namespace, path: ['Warm', `up-${spies.length}`] }), new Counter({}), '/task');
      return { t, spy };
    }

    /** Runs `act`, then records what it cost under `id`. */
    async function measure(id: string, spy: SpiedClient, queue: KeptTasks, act: () => Promise<unknown>): Promise<void> {
      spy.clear();
      const before = queue.tasks.length;
      await act();
      const row = measured.get(id) ?? {};
      row[backend.column] = summary(spy.calls);
      const tasks = queue.tasks.length - before;
      if (row.tasks !== undefined) assert.equal(tasks, row.tasks, `${id}: the same tasks on both backends`);
      row.tasks = tasks;
      measured.set(id, row);
    }

    it('counts a chain: the kickoff, a step that schedules the next, duplicates, a step that completes', async () => {
      const namespace = uniqueNamespace('costs');
      const queue = new KeptTasks();
      const { t, spy } = await instance(namespace, queue);
      const other = await instance(namespace, queue);
      const key = keys.key({ namespace, path: ['Order', 'chain'] });
      await measure('kickoff', spy, queue, () => t.locker.schedule(key, new Counter({ count: 0 }), '/task'));
      t.behave(async (ctx) => { await ctx.schedule('/task'); });
      const first = queue.last();
      await measure('step-schedules-next', spy, queue, async () => assert.equal((await deliver(t, first)).status, 200));
      await measure('duplicate-read', other.spy, queue, async () => assert.equal((await deliver(other.t, first)).status, 200));
      await measure('duplicate-remembered', other.spy, queue, async () => assert.equal((await deliver(other.t, first)).status, 200));
      t.behave(() => undefined);
      const second = queue.last();
      await measure('step-completes', spy, queue, async () => {
        assert.equal((await deliver(t, second)).status, 200);
        await t.locker.shutdown(); // waits for the finished chain's ledger record to be removed, counted here
      });
      await other.t.locker.shutdown();
    });

    it('counts a refusal, a failed attempt, a step failed for good', async () => {
      const namespace = uniqueNamespace('costs');
      const queue = new KeptTasks();
      const a = await instance(namespace, queue);
      const b = await instance(namespace, queue);
      const held = keys.key({ namespace, path: ['Order', 'held'] });
      await a.t.locker.schedule(held, new Counter({ count: 0 }), '/task');
      const task = queue.last();
      let release!: () => void;
      const blocked = new Promise<void>((resolve) => { release = resolve; });
      let started!: () => void;
      const running = new Promise<void>((resolve) => { started = resolve; });
      a.t.behave(async () => { started(); await blocked; });
      const answer = deliver(a.t, task).then((r) => r.status);
      await running;
      await measure('refused', b.spy, queue, async () => assert.equal((await deliver(b.t, task)).status, 503));
      const mark = a.spy.calls.length;
      release();
      assert.equal(await answer, 200);
      // The finished step's ledger record is removed after the answer, grouped with others within
      // about 10 ms: let that commit land before the next row is counted on the same client.
      const commits = (): number => a.spy.calls.slice(mark).filter((c) => c === 'commit').length;
      for (let i = 0; i < 200 && commits() < 2; i++) { // its finishing commit, then the removal's
        await new Promise((resolve) => setTimeout(resolve, 10));
      }

      const failing = keys.key({ namespace, path: ['Order', 'failing'] });
      await a.t.locker.schedule(failing, new Counter({ count: 0 }), '/task');
      a.t.behave(() => { throw new Error('downstream is down'); });
      await measure('attempt-fails', a.spy, queue, async () => assert.equal((await deliver(a.t, queue.last())).status, 500));
      a.t.behave(() => { throw new PermanentError('cannot be done'); });
      await measure('step-fails-for-good', a.spy, queue, async () => {
        assert.equal((await deliver(a.t, queue.last())).status, 200);
        await a.t.locker.shutdown();
      });
      await b.t.locker.shutdown();
    });

    it('counts a sweep with nothing due, and one that re-delivers a lost step', async () => {
      const namespace = uniqueNamespace('costs');
      const queue = new KeptTasks();
      let now = Date.now();
      const { t, spy } = await instance(namespace, queue, { clock: () => now, stallAfter: 60_000 }); // the warm-up's task is never delivered
      await measure('sweep-nothing-due', spy, queue, () => t.locker.sweep());
      now += 61_000;
      await measure('sweep-resends', spy, queue, async () => assert.equal((await t.locker.sweep()).resent, 1));
      await t.locker.shutdown();
    });
  });
}

describe('docs/reference/costs.md', () => {
  it('is what was measured, row by row', { skip: process.env.DATASTORE_EMULATOR_HOST && process.env.LOCKER_FIRESTORE_EMULATOR_HOST ? false : 'needs both emulators' }, () => {
    const rows = Object.fromEntries(documented());
    assert.deepEqual(rows, Object.fromEntries(measured));
  });
});
