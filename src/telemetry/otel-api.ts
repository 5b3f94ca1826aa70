/**
 * The part of `@opentelemetry/api` the Locker uses, as structural types, and its optional loading:
 * the package is an optional peer dependency, so the library runs without it (no telemetry) and
 * none of its types appear in the library's own declarations. With the package installed and no
 * SDK registered, its calls are its own no-ops.
 */

/** Attribute values as OpenTelemetry takes them. */
export type OtelAttributes = Record<string, string | number | boolean>;

/** A span, as the Locker uses it. */
export interface OtelSpan {
  setAttribute(name: string, value: string | number | boolean): unknown;
  setAttributes(attributes: OtelAttributes): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error | string): void;
  isRecording(): boolean;
  end(): void;
}

/** A tracer, as the Locker uses it. */
export interface OtelTracer {
  startSpan(name: string): OtelSpan;
}

/** A counter, as the Locker uses it. */
export interface OtelCounter {
  add(value: number, attributes?: OtelAttributes): void;
}

/** A meter, as the Locker uses it. */
export interface OtelMeter {
  createCounter(name: string, options?: { description?: string; unit?: string }): OtelCounter;
}

/** The context API, as the Locker uses it (a context is opaque here). */
export interface OtelContextApi {
  active(): object;
  with<T>(context: object, fn: () => T): T;
}

/** The `@opentelemetry/api` module, as the Locker uses it. */
export interface OtelApi {
  trace: {
    getTracer(name: string): OtelTracer;
    setSpan(context: object, span: OtelSpan): object;
  };
  context: OtelContextApi;
  metrics: {
    getMeterProvider(): { getMeter(name: string): OtelMeter };
  };
}

/** Status code of a span that ended in error (`SpanStatusCode.ERROR`). */
export const SPAN_STATUS_ERROR = 2;

/**
 * `@opentelemetry/api`, or undefined when it is not installed. Anything else that goes wrong
 * loading it is thrown: a broken install should be seen, not silently run without telemetry.
 */
export function loadOtelApi(load: () => unknown = () => require('@opentelemetry/api')): OtelApi | undefined {
  try {
    return load() as OtelApi;
  } catch (error) {
    if (isModuleNotFound(error)) return undefined;
    throw error;
  }
}

function isModuleNotFound(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 'MODULE_NOT_FOUND' && typeof message === 'string' && message.includes("'@opentelemetry/api'");
}
