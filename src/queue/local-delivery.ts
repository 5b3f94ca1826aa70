/**
 * One delivery attempt of the local dispatcher, and when to try again: an HTTP POST bounded by a
 * dispatch deadline, Cloud Tasks' backoff schedule and the `Retry-After` answer header.
 */
import { errorMessage } from '../errors/error-text';
import http from 'node:http';
import https from 'node:https';

/** The longest delay a Node timer takes; longer waits are made of several timers. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Where a task goes: `baseUrl + path`, over http or https. Throws on anything else. */
export function targetUrl(baseUrl: string, path: string): URL {
  const url = new URL(baseUrl.replace(/\/+$/, '') + path);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`baseUrl must be an http or https URL, got ${JSON.stringify(baseUrl)}`);
  }
  return url;
}

/** What one attempt came to. */
export type AttemptOutcome =
  /** The app answered (any status; only 2xx ends the task). */
  | { kind: 'response'; status: number; retryAfterMs?: number }
  /** No answer within the dispatch deadline: the request was aborted. */
  | { kind: 'deadline' }
  /** The request failed before an answer came: refused connection, reset, bad URL. */
  | { kind: 'network'; message: string }
  /** The queue shut down while the request ran: the request was aborted. */
  | { kind: 'cancelled' };

/** One attempt to send. */
export interface Attempt {
  url: URL;
  headers: Record<string, string>;
  body: Buffer;
  /** How long to wait for the whole answer before aborting. */
  deadlineMs: number;
  /** The connection pool for the URL's protocol. */
  agent: http.Agent;
  /** Aborts the attempt when the queue shuts down. */
  signal: AbortSignal;
}

/** Sends one attempt; never rejects: every way it can end is an {@link AttemptOutcome}. */
export function sendAttempt(attempt: Attempt): Promise<AttemptOutcome> {
  return new Promise((resolve) => {
    if (attempt.signal.aborted) return resolve({ kind: 'cancelled' });
    const abort = new AbortController();
    let settled = false;
    const finish = (outcome: AttemptOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      attempt.signal.removeEventListener('abort', onCancel);
      resolve(outcome);
      if (outcome.kind === 'deadline' || outcome.kind === 'cancelled') abort.abort();
    };
    const onCancel = (): void => finish({ kind: 'cancelled' });
    const deadline = setTimeout(() => finish({ kind: 'deadline' }), attempt.deadlineMs).unref();
    attempt.signal.addEventListener('abort', onCancel, { once: true });
    try {
      const client = attempt.url.protocol === 'https:' ? https : http;
      const options = { method: 'POST', headers: attempt.headers, agent: attempt.agent, signal: abort.signal };
      const request = client.request(attempt.url, options, (res) => {
        res.on('error', (err) => finish(networkFailure(err)));
        res.on('close', () => {
          if (!res.complete) finish({ kind: 'network', message: 'the answer was cut short' });
        });
        res.on('end', () => {
          const retryAfterMs = parseRetryAfter(res.headers['retry-after'], Date.now());
          finish({ kind: 'response', status: res.statusCode ?? 0, retryAfterMs });
        });
        res.resume();
      });
      request.on('error', (err) => finish(networkFailure(err)));
      request.end(attempt.body);
    } catch (err) {
      finish(networkFailure(err));
    }
  });
}

function networkFailure(err: unknown): AttemptOutcome {
  return { kind: 'network', message: errorMessage(err) };
}

/** A queue's retry settings, as Cloud Tasks names them. */
export interface BackoffPolicy {
  minBackoffMs: number;
  maxBackoffMs: number;
  maxDoublings: number;
}

/**
 * The wait after the `failedAttempts`-th failed attempt, as Cloud Tasks computes it: the interval
 * starts at `minBackoff`, doubles `maxDoublings` times, then grows linearly by that last interval,
 * and never exceeds `maxBackoff`. With 10 s / 300 s / 3 doublings: 10, 20, 40, 80, 160, 240, 300 s.
 */
export function backoffMs(policy: BackoffPolicy, failedAttempts: number): number {
  if (policy.minBackoffMs === 0) return 0;
  const n = Math.max(0, failedAttempts - 1);
  const doublings = Math.min(n, policy.maxDoublings);
  const doubled = policy.minBackoffMs * 2 ** doublings;
  const wait = doubled * (1 + n - doublings);
  return Math.min(policy.maxBackoffMs, wait);
}

/** The wait before the next attempt: the backoff, or the app's `Retry-After` when that is longer. */
export function retryDelayMs(policy: BackoffPolicy, failedAttempts: number, retryAfterMs?: number): number {
  return Math.max(backoffMs(policy, failedAttempts), retryAfterMs ?? 0);
}

/**
 * A `Retry-After` header in milliseconds from `nowMs`: delay-seconds or an HTTP date (a date in
 * the past means 0). Undefined when the header is absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
