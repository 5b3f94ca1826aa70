/**
 * OpenTelemetry spans and counters for the phases of an attempt, through `@opentelemetry/api`
 * only (the application registers the SDK and exporters it wants):
 *
 * - spans `datastore_locker.take` (reading the lock and taking the lease, or answering without
 *   running: its `datastore_locker.outcome`), `datastore_locker.run` (the handler; an error it
 *   throws is recorded) and `datastore_locker.finish` (the write that completes the step or
 *   schedules the next), each with the step's key, namespace, kind, seq, chain and attempt;
 * - counters `datastore_locker.takes`, `.runs`, `.finishes`, `.refusals` and `.drops`, with the
 *   entity's kind only (a drop also its reason, a run its outcome): low cardinality. A run is
 *   counted where its span ends, when the handler settles; the others from the events
 *   (`recordEvent`), so no step code counts.
 *
 * Without the API installed, or with `telemetry: false`, every hook is one check of a field.
 * With the API and no SDK, a span is the API's non-recording span (attributes are not even
 * built: `isRecording()` is false) and a counter the API's no-op meter's.
 */
import type { Key } from '@google-cloud/datastore';
import { keyPath } from '../keys/key-codec';
import type { LockerEvents, StepEvent } from '../events/events';
import { SPAN_STATUS_ERROR, type OtelApi, type OtelAttributes, type OtelCounter, type OtelSpan, type OtelTracer } from './otel-api';

/** The instrumentation scope's name: the tracer's and the meter's. */
export const TELEMETRY_SCOPE = 'datastore-locker';

/** The phases of an attempt that get a span. */
export type Phase = 'take' | 'run' | 'finish';
/** What is counted. */
export type Tally = 'take' | 'run' | 'finish' | 'refuse' | 'drop';

/** Span names by phase. */
export const SPAN_NAMES: Readonly<Record<Phase, string>> = {
  take: 'datastore_locker.take', run: 'datastore_locker.run', finish: 'datastore_locker.finish',
};
/** Counter names by what they count. */
export const COUNTER_NAMES: Readonly<Record<Tally, string>> = {
  take: 'datastore_locker.takes', run: 'datastore_locker.runs', finish: 'datastore_locker.finishes',
  refuse: 'datastore_locker.refusals', drop: 'datastore_locker.drops',
};
const COUNTER_HELP: Readonly<Record<Tally, string>> = {
  take: 'Leases taken (free, or a stale one taken over): the handler runs',
  run: 'Handler runs, by outcome (ok, error)',
  finish: 'Steps finished: the chain completed or the next step scheduled',
  refuse: 'Tasks refused because another attempt holds a fresh lease',
  drop: 'Tasks dropped without running, by reason',
};

/** Attribute names. */
export const Attr = {
  key: 'datastore_locker.key',
  namespace: 'datastore_locker.namespace',
  kind: 'datastore_locker.kind',
  seq: 'datastore_locker.seq',
  chain: 'datastore_locker.chain',
  attempt: 'datastore_locker.attempt',
  outcome: 'datastore_locker.outcome',
  reason: 'datastore_locker.reason',
} as const;

/** What a span or a count is about. */
export interface StepAttributes {
  key: Key;
  seq: number;
  chain: string | undefined;
  attempt: string;
}

/** A span that records nothing: what the hooks get without the API. */
const NO_SPAN: OtelSpan = {
  setAttribute: () => NO_SPAN, setAttributes: () => NO_SPAN, setStatus: () => NO_SPAN,
  recordException: () => {}, isRecording: () => false, end: () => {},
};

/** The Locker's spans and counters; inert without the API. */
export class Telemetry {
  private readonly tracer: OtelTracer | undefined;
  private meterProvider: unknown;
  private counters: Record<Tally, OtelCounter> | undefined;

  constructor(private readonly api: OtelApi | undefined) {
    this.tracer = api?.trace.getTracer(TELEMETRY_SCOPE);
  }

  /** Whether the hooks reach the API (installed and not turned off). */
  get enabled(): boolean {
    return this.api !== undefined;
  }

  /**
   * Runs `fn` in a span of `phase` (the active span while it runs, so the handler's own spans
   * nest under `run`); an error `fn` throws is recorded on the span and rethrown.
   */
  span<T>(phase: Phase, step: StepAttributes, fn: (span: OtelSpan) => Promise<T>): Promise<T> {
    // Not an async function: without a recording span, fn's own promise is handed on, no wrapper around it (the run span's, counted, aside).
    if (!this.tracer) return fn(NO_SPAN);
    const span = this.tracer.startSpan(SPAN_NAMES[phase]);
    // The run span's work is counted when it settles, recorded or not.
    const work = phase === 'run' ? (s: OtelSpan) => this.counted(step.key, s, fn) : fn;
    if (!span.isRecording()) return work(span);
    return this.recorded(span, step, work);
  }

  private async recorded<T>(span: OtelSpan, step: StepAttributes, fn: (span: OtelSpan) => Promise<T>): Promise<T> {
    span.setAttributes(stepAttributes(step));
    const api = this.api!;
    try {
      return await api.context.with(api.trace.setSpan(api.context.active(), span), () => fn(span));
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: SPAN_STATUS_ERROR, message: error instanceof Error ? error.message : String(error) });
      throw error;
    } finally {
      span.end();
    }
  }

  /** The `run` span's work, counted when it settles (`datastore_locker.runs`, by outcome): the step code keeps only its span. */
  private async counted<T>(key: Key, span: OtelSpan, fn: (span: OtelSpan) => Promise<T>): Promise<T> {
    try {
      const result = await fn(span);
      this.count('run', key, { [Attr.outcome]: 'ok' });
      return result;
    } catch (error) {
      this.count('run', key, { [Attr.outcome]: 'error' });
      throw error;
    }
  }

  /**
   * Counts what an event says (the events port feeds every event here, `emit.ts`): a lease taken
   * (`acquired`, or a stale one taken over: `overwritten`), a step finished (`completed`: the
   * chain complete, or the next step scheduled), a refusal, a drop by its reason.
   */
  recordEvent<K extends keyof LockerEvents>(name: K, args: LockerEvents[K]): void {
    if (!this.api) return;
    const event = args[0] as StepEvent;
    switch (name) {
      case 'acquired':
      case 'overwritten':
        return this.count('take', event.key);
      case 'completed':
        return this.count('finish', event.key, { [Attr.outcome]: (args[0] as LockerEvents['completed'][0]).next === undefined ? 'complete' : 'scheduled' });
      case 'refused':
        return this.count('refuse', event.key);
      case 'dropped':
        return this.count('drop', event.key, { [Attr.reason]: (args[0] as LockerEvents['dropped'][0]).reason });
      default:
        return undefined;
    }
  }

  /** Adds one to the `tally` counter, with the entity's kind and `extra` attributes. */
  count(tally: Tally, key: Key, extra?: OtelAttributes): void {
    if (!this.api) return;
    try {
      this.instruments()[tally].add(1, extra ? { [Attr.kind]: key.kind, ...extra } : { [Attr.kind]: key.kind });
    } catch {
      // telemetry never fails a step
    }
  }

  /** The counters of the meter provider registered now (made again when another one is registered). */
  private instruments(): Record<Tally, OtelCounter> {
    const provider = this.api!.metrics.getMeterProvider();
    if (this.counters && provider === this.meterProvider) return this.counters;
    const meter = provider.getMeter(TELEMETRY_SCOPE);
    const make = (tally: Tally) => meter.createCounter(COUNTER_NAMES[tally], { description: COUNTER_HELP[tally], unit: '{task}' });
    this.counters = { take: make('take'), run: make('run'), finish: make('finish'), refuse: make('refuse'), drop: make('drop') };
    this.meterProvider = provider;
    return this.counters;
  }
}

function stepAttributes(step: StepAttributes): OtelAttributes {
  return {
    [Attr.key]: keyPath(step.key), [Attr.namespace]: step.key.namespace ?? '', [Attr.kind]: step.key.kind,
    [Attr.seq]: step.seq, [Attr.chain]: step.chain ?? '', [Attr.attempt]: step.attempt,
  };
}
