// OpenTelemetry through @opentelemetry/api with the real SDK registered (sdk-trace-base's
// InMemorySpanExporter, sdk-metrics with a reader collected by hand): a step gives the take, run
// and finish spans with its key and seq; a refusal and a drop count; a handler's error is recorded
// on its run span; `telemetry: false` and a missing API record nothing. One process per test file,
// so the global providers registered here are this file's only.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '@opentelemetry/api';
import { AlwaysOffSampler, BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { ConfigError } from '../../src/errors/errors';
import { MemoryStore } from '../../src/store/memory/store';
import { newLedgerRecord } from '../../src/rules/ledger-record';
import { loadOtelApi, type OtelApi } from '../../src/telemetry/otel-api';
import { Telemetry } from '../../src/telemetry/telemetry';
import { StepState, type Properties } from '../../src/types';
import { keys, taskApp } from '../support/task-app';

/** The real API fits the structural types the library loads it as (a compile-time check). */
const typed: OtelApi = api;

/** A reader collected on demand (the SDK's own `MetricReader`, with nothing to flush or shut down). */
class CollectingReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

const spans = new InMemorySpanExporter();
const reader = new CollectingReader();

/** The sum of counter `name` over its data points whose attributes include `where`. */
async function counted(name: string, where: Record<string, string> = {}): Promise<number> {
  const { resourceMetrics } = await reader.collect() as { resourceMetrics: ResourceMetrics };
  let sum = 0;
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      for (const point of metric.dataPoints) {
        if (Object.entries(where).every(([k, v]) => point.attributes[k] === v)) sum += point.value as number;
      }
    }
  }
  return sum;
}

const lock = (over: Properties = {}): Properties => ({
  count: 0, lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled, lock_chain: 'c1', ...over,
});

function named(name: string): ReadableSpan[] {
  return spans.getFinishedSpans().filter((s) => s.name === name);
}

describe('OpenTelemetry spans and counters with the SDK registered', () => {
  before(() => {
    assert.ok(api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] })));
    assert.ok(api.metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] })));
    assert.equal(typed.trace, api.trace);
  });

  it('a step gives take, run and finish spans with its key, seq, chain and attempt; the take, run and finish counters count it', async () => {
    spans.reset();
    const store = new MemoryStore({ projectId: 'locker-test' });
    const t = taskApp(store);
    const key = keys.key(['Order', 'traced']);
    // Step 1 of chain c1 with its ledger record, as schedule() writes it: a task naming its chain is checked against the record.
    const record = newLedgerRecord(key, 1, 'c1', { path: '/task', body: '', scheduleTime: undefined, stallAfter: 60_000 }, new Date());
    await store.transaction(async (tx) => {
      tx.put(key, lock({ lock_task: record.id }), []);
      tx.putLedger(record);
    });
    const res = await t.send(key, 1, undefined, { 'x-lock-chain': 'c1' });
    assert.equal(res.status, 200);
    const attempt = t.runs[0]!.attempt;
    for (const name of ['datastore_locker.take', 'datastore_locker.run', 'datastore_locker.finish']) {
      const [span, ...more] = named(name);
      assert.ok(span, `a ${name} span`);
      assert.equal(more.length, 0);
      assert.equal(span.attributes['datastore_locker.key'], 'Order:"traced"');
      assert.equal(span.attributes['datastore_locker.seq'], 1);
      assert.equal(span.attributes['datastore_locker.kind'], 'Order');
      assert.equal(span.attributes['datastore_locker.chain'], 'c1');
      assert.equal(span.attributes['datastore_locker.attempt'], attempt);
      assert.equal(span.instrumentationScope.name, 'datastore-locker');
    }
    assert.equal(named('datastore_locker.take')[0]!.attributes['datastore_locker.outcome'], 'taken');
    assert.equal(await counted('datastore_locker.takes', { 'datastore_locker.kind': 'Order' }), 1);
    assert.equal(await counted('datastore_locker.runs', { 'datastore_locker.outcome': 'ok' }), 1);
    assert.equal(await counted('datastore_locker.finishes', { 'datastore_locker.outcome': 'complete' }), 1);
  });

  it('a refusal and a drop increment their counters, and their take span says why', async () => {
    spans.reset();
    const store = new MemoryStore({ projectId: 'locker-test' });
    const t = taskApp(store);
    const held = keys.key(['Invoice', 'held']);
    const done = keys.key(['Invoice', 'done']);
    await store.transaction(async (tx) => {
      tx.put(held, lock({ lock_req: 'another-attempt' }), []);
      tx.put(done, lock({ lock_seq: 2, lock_state: StepState.complete }), []);
    });
    const refusalsBefore = await counted('datastore_locker.refusals', { 'datastore_locker.kind': 'Invoice' });
    const dropsBefore = await counted('datastore_locker.drops', { 'datastore_locker.kind': 'Invoice', 'datastore_locker.reason': 'finished' });
    assert.equal((await t.send(held, 1)).status, 503);
    assert.equal((await t.send(done, 1)).status, 200);
    assert.equal(await counted('datastore_locker.refusals', { 'datastore_locker.kind': 'Invoice' }), refusalsBefore + 1);
    assert.equal(await counted('datastore_locker.drops', { 'datastore_locker.kind': 'Invoice', 'datastore_locker.reason': 'finished' }), dropsBefore + 1);
    const outcomes = named('datastore_locker.take').map((s) => [s.attributes['datastore_locker.key'], s.attributes['datastore_locker.outcome']]);
    assert.deepEqual(outcomes, [['Invoice:"held"', 'refused'], ['Invoice:"done"', 'dropped']]);
    assert.equal(named('datastore_locker.run').length, 0, 'nothing ran');
  });

  it('records a handler\'s error on its run span and counts the run as an error', async () => {
    spans.reset();
    const store = new MemoryStore({ projectId: 'locker-test' });
    const t = taskApp(store);
    const key = keys.key(['Order', 'throws']);
    await store.transaction(async (tx) => tx.put(key, lock(), []));
    t.behave(() => { throw new Error('card declined'); });
    const before = await counted('datastore_locker.runs', { 'datastore_locker.outcome': 'error' });
    assert.equal((await t.send(key, 1)).status, 500);
    const [run] = named('datastore_locker.run');
    assert.equal(run?.status.code, api.SpanStatusCode.ERROR);
    assert.equal(run?.status.message, 'card declined');
    assert.equal(run?.events[0]?.name, 'exception');
    assert.equal(await counted('datastore_locker.runs', { 'datastore_locker.outcome': 'error' }), before + 1);
    assert.equal(named('datastore_locker.finish').length, 0);
  });

  it('counts a run where its span ends, also when the span is not recorded (sampled out) and when the handler throws at once', async () => {
    const unsampled = new BasicTracerProvider({ sampler: new AlwaysOffSampler() });
    const telemetry = new Telemetry({ ...api, trace: { getTracer: (name) => unsampled.getTracer(name), setSpan: api.trace.setSpan } });
    const key = keys.key(['Sampled', 'out']);
    const step = { key, seq: 1, chain: undefined, attempt: 'a' };
    const runs = (outcome: string) => counted('datastore_locker.runs', { 'datastore_locker.kind': 'Sampled', 'datastore_locker.outcome': outcome });
    const [ok, error] = [await runs('ok'), await runs('error')];
    assert.equal(await telemetry.span('run', step, async (span) => (assert.equal(span.isRecording(), false), 7)), 7);
    await assert.rejects(telemetry.span('run', step, async () => { throw new RangeError('kept'); }), RangeError);
    await assert.rejects(telemetry.span('run', step, () => { throw new TypeError('at once'); }), TypeError);
    assert.equal(await telemetry.span('take', step, async () => 1), 1);
    assert.equal(await runs('ok'), ok + 1);
    assert.equal(await runs('error'), error + 2);
  });

  it('with telemetry: false, records nothing', async () => {
    spans.reset();
    const store = new MemoryStore({ projectId: 'locker-test' });
    const t = taskApp(store, { telemetry: false });
    const key = keys.key(['Quiet', 'untraced']);
    await store.transaction(async (tx) => tx.put(key, lock(), []));
    assert.equal((await t.send(key, 1)).status, 200);
    assert.equal(t.runs.length, 1);
    assert.equal(spans.getFinishedSpans().length, 0);
    assert.equal(await counted('datastore_locker.takes', { 'datastore_locker.kind': 'Quiet' }), 0);
  });
});

describe('without @opentelemetry/api installed', () => {
  const missing = () => {
    throw Object.assign(new Error("Cannot find module '@opentelemetry/api'"), { code: 'MODULE_NOT_FOUND' });
  };

  it('loads as undefined, and the hooks only run what they wrap', async () => {
    assert.equal(loadOtelApi(missing), undefined);
    const telemetry = new Telemetry(loadOtelApi(missing));
    assert.equal(telemetry.enabled, false);
    const key = keys.key(['Order', 'x']);
    assert.equal(await telemetry.span('run', { key, seq: 1, chain: undefined, attempt: 'a' }, async (span) => (span.setAttribute('k', 1), 42)), 42);
    await assert.rejects(telemetry.span('run', { key, seq: 1, chain: undefined, attempt: 'a' }, async () => { throw new RangeError('kept'); }), RangeError);
    telemetry.count('drop', key, { reason: 'finished' });
  });

  it('refuses a telemetry option that is not a boolean', () => {
    assert.throws(() => taskApp(new MemoryStore(), { telemetry: 'yes' as unknown as boolean }), (e: unknown) => e instanceof ConfigError && /telemetry must be true or false/.test(e.message));
  });

  it('does not hide another failure to load it (a broken install)', () => {
    const broken = () => { throw Object.assign(new Error("Cannot find module 'some-dependency-of-it'"), { code: 'MODULE_NOT_FOUND' }); };
    assert.throws(() => loadOtelApi(broken), /some-dependency-of-it/);
    assert.equal(loadOtelApi()?.trace, api.trace, 'installed here: the real module');
  });
});
