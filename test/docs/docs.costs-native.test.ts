/**
 * docs/reference/costs.md's table for Firestore in Native mode: what each kind of step costs in
 * Firestore RPCs, documents read and documents written, and Cloud Tasks CreateTask calls. This test
 * counts them on the emulator in Native mode (started for this file), through a recording gRPC
 * proxy on loopback (test/support/grpc-recorder.ts) between a `FirestoreStore`'s client and the
 * emulator: the RPCs by method, the documents a `BatchGetDocuments` asks for, the documents a
 * `RunQuery` returns and the writes a `Commit` or a `BatchWrite` carries. The scenarios are docs.costs.test.ts's.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FirestoreKeyStore } from '../../src/store/firestore/store';
import { PermanentError } from '../../src/errors/errors';
import { uniqueNamespace } from '../support/emulator';
import { useFirestoreNative, NATIVE_EMULATOR_OPTIONS } from '../support/firestore-native';
import { startGrpcRecorder, type GrpcRecorder, type RecordedCall } from '../support/grpc-recorder';
import { KeptTasks, deliver } from '../support/kept-tasks';
import { Counter, keys, taskApp, type TaskApp } from '../support/task-app';

const PAGE = join(__dirname, '..', '..', 'docs', 'reference', 'costs.md');
const MARK = '<!-- costs-native: measured by test/docs/docs.costs-native.test.ts -->';

/** One row of the page's Native-mode table. */
interface Row { rpcs: string; read: number; written: number; tasks: number }

/** The rows of the page's Native-mode table, by scenario. */
function documented(): Map<string, Row> {
  const table = readFileSync(PAGE, 'utf8').split(MARK)[1]?.split('\n\n')[0];
  assert.ok(table, 'the page has the Native-mode table');
  const rows = new Map<string, Row>();
  for (const line of table.trim().split('\n').slice(2)) {
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    const id = /`([a-z-]+)`/.exec(cells[0]!)?.[1];
    assert.ok(id, `a row names its scenario: ${line}`);
    rows.set(id, { rpcs: cells[1]!, read: Number(cells[2]), written: Number(cells[3]), tasks: Number(cells[4]) });
  }
  return rows;
}

// Field numbers of google.firestore.v1 (firestore.proto): what is read and written.
const BATCH_GET_DOCUMENTS = 2; // BatchGetDocumentsRequest.documents: the documents asked for
const QUERY_DOCUMENT = 1; // RunQueryResponse.document: a document a query returned
const WRITES = 2; // CommitRequest.writes, BatchWriteRequest.writes

/** What `calls` cost: the RPCs per method in the order first sent, documents read and written. */
function cost(calls: readonly RecordedCall[]): Omit<Row, 'tasks'> {
  const counts = new Map<string, number>();
  let read = 0;
  let written = 0;
  const field = (m: Map<number, number>, n: number): number => m.get(n) ?? 0;
  for (const call of calls) {
    assert.equal(call.unreadable, undefined, `the recorder read every message of ${call.method}`);
    counts.set(call.method, (counts.get(call.method) ?? 0) + 1);
    if (call.method === 'BatchGetDocuments') read += call.requests.reduce((sum, m) => sum + field(m, BATCH_GET_DOCUMENTS), 0);
    if (call.method === 'RunQuery') read += call.responses.reduce((sum, m) => sum + field(m, QUERY_DOCUMENT), 0);
    if (call.method === 'Commit' || call.method === 'BatchWrite') written += call.requests.reduce((sum, m) => sum + field(m, WRITES), 0);
  }
  const rpcs = counts.size === 0 ? 'none' : [...counts].map(([m, n]) => (n === 1 ? m : `${n} × ${m}`)).join(', ');
  return { rpcs, read, written };
}

const native = useFirestoreNative();
const measured = new Map<string, Row>();

describe('what a step costs on the Firestore emulator in Native mode', () => {
  const recorders: GrpcRecorder[] = [];
  after(async () => {
    for (const r of recorders) await r.close();
  });

  /** A Locker on a FirestoreKeyStore (FirestoreStore with Datastore Keys, as taskApp uses) whose client goes through a recorder of its own, warmed by a kickoff. */
  async function instance(namespace: string, queue: KeptTasks, options: Parameters<typeof taskApp>[1] = {}): Promise<{ t: TaskApp; recorder: GrpcRecorder }> {
    const recorder = await startGrpcRecorder(native.host());
    recorders.push(recorder);
    const store = new FirestoreKeyStore(native.clientOf(recorder.host), { ...NATIVE_EMULATOR_OPTIONS, namespaces: [namespace] });
    const t = taskApp(store, { queue, ...options });
    await t.locker.schedule(keys.key({ namespace, path: ['Warm', `up-${recorders.length}`] }), new Counter({}), '/task');
    // The store's check, once, that a stale updateTime is refused (before its first compare-and-swap),
    // done here so that no row below pays it; the first instance's is a row of its own.
    recorder.clear();
    await store.checkPreconditions();
    if (!measured.has('precondition-check')) measured.set('precondition-check', { ...cost(recorder.calls), tasks: 0 });
    return { t, recorder };
  }

  /** Runs `act`, then records what it cost under `id`. */
  async function measure(id: string, recorder: GrpcRecorder, queue: KeptTasks, act: () => Promise<unknown>): Promise<void> {
    recorder.clear();
    const before = queue.tasks.length;
    await act();
    measured.set(id, { ...cost(recorder.calls), tasks: queue.tasks.length - before });
  }

  it('the recorder reads what it forwards: a document written and read back through it is counted once each way', async () => {
    const recorder = await startGrpcRecorder(native.host());
    recorders.push(recorder);
    const client = native.clientOf(recorder.host);
    const doc = client.doc(`Probe/${uniqueNamespace('rec')}`);
    await doc.set({ a: 1 });
    assert.equal(Number((await doc.get()).data()?.a), 1, 'the call went through the proxy and back');
    assert.deepEqual(cost(recorder.calls), { rpcs: 'Commit, BatchGetDocuments', read: 1, written: 1 });
  });

  it('counts a chain: the kickoff, a step that schedules the next, duplicates, a step that completes', async () => {
    const namespace = uniqueNamespace('costs');
    const queue = new KeptTasks();
    const { t, recorder } = await instance(namespace, queue);
    const other = await instance(namespace, queue);
    const key = keys.key({ namespace, path: ['Order', 'chain'] });
    await measure('kickoff', recorder, queue, () => t.locker.schedule(key, new Counter({ count: 0 }), '/task'));
    t.behave(async (ctx) => { await ctx.schedule('/task'); });
    const first = queue.last();
    await measure('step-schedules-next', recorder, queue, async () => assert.equal((await deliver(t, first)).status, 200));
    await measure('duplicate-read', other.recorder, queue, async () => assert.equal((await deliver(other.t, first)).status, 200));
    await measure('duplicate-remembered', other.recorder, queue, async () => assert.equal((await deliver(other.t, first)).status, 200));
    t.behave(() => undefined);
    const second = queue.last();
    await measure('step-completes', recorder, queue, async () => {
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
    await measure('refused', b.recorder, queue, async () => assert.equal((await deliver(b.t, task)).status, 503));
    const mark = a.recorder.calls.length;
    release();
    assert.equal(await answer, 200);
    // The finished step's ledger record is removed after the answer, grouped with others within
    // about 10 ms: let that commit land before the next row is counted on the same client.
    const commits = (): number => a.recorder.calls.slice(mark).filter((c) => c.method === 'Commit').length;
    for (let i = 0; i < 200 && commits() < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));

    const failing = keys.key({ namespace, path: ['Order', 'failing'] });
    await a.t.locker.schedule(failing, new Counter({ count: 0 }), '/task');
    a.t.behave(() => { throw new Error('downstream is down'); });
    await measure('attempt-fails', a.recorder, queue, async () => assert.equal((await deliver(a.t, queue.last())).status, 500));
    a.t.behave(() => { throw new PermanentError('cannot be done'); });
    await measure('step-fails-for-good', a.recorder, queue, async () => {
      assert.equal((await deliver(a.t, queue.last())).status, 200);
      await a.t.locker.shutdown();
    });
    await b.t.locker.shutdown();
  });

  it('counts a sweep with nothing due, and one that re-delivers a lost step', async () => {
    const namespace = uniqueNamespace('costs');
    const queue = new KeptTasks();
    let now = Date.now();
    const { t, recorder } = await instance(namespace, queue, { clock: () => now, stallAfter: 60_000 }); // the warm-up's task is never delivered
    await measure('sweep-nothing-due', recorder, queue, () => t.locker.sweep());
    now += 61_000;
    await measure('sweep-resends', recorder, queue, async () => assert.equal((await t.locker.sweep()).resent, 1));
    await t.locker.shutdown();
  });

  it('counts finished steps\' ledger records removed together, as grouped under load', async () => {
    const namespace = uniqueNamespace('costs');
    const recorder = await startGrpcRecorder(native.host());
    recorders.push(recorder);
    const store = new FirestoreKeyStore(native.clientOf(recorder.host), { ...NATIVE_EMULATOR_OPTIONS, namespaces: [namespace] });
    await store.checkPreconditions();
    const due = new Date();
    const records = ['r1', 'r2', 'r3'].map((id) => ({
      id, key: keys.key({ namespace, path: ['Order', id] }), seq: 1, chain: 'c', path: '/task', body: '{}', createdAt: due, task: id, sends: 1, sentAt: due, failures: 0, due,
    }));
    await store.transaction(async (tx) => { for (const r of records) tx.putLedger(r); });
    const read = await Promise.all(records.map((r) => store.readWithLedger(r.key, r.id)));
    const queue = new KeptTasks();
    await measure('retire-grouped', recorder, queue, () => store.retireLedgerMany(records.map((r, i) => ({ key: r.key, id: r.id, version: read[i]!.recordVersion })), () => true));
    assert.deepEqual((await store.listDue(new Date(due.getTime() + 1), 10)).records, [], 'all three removed');
  });

  it('docs/reference/costs.md\'s Native-mode table is what was measured, row by row', () => {
    assert.deepEqual(Object.fromEntries(documented()), Object.fromEntries(measured));
  });
});
