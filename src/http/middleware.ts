/**
 * The HTTP side of a step: authenticate the request before anything else, parse `X-Lock-Key`,
 * `X-Lock-Seq` and the payload (`payload.ts`; a malformed request is a 400 that never touches the
 * store), run the attempt, and answer. Works with Express 4 and 5, with or without a body parser in front.
 */
import type { SettingName, Settings } from '../config/settings';
import type { Request, RequestHandler, Response } from 'express';
import { runAttempt, type AttemptParts } from '../step/attempt';
import { answers, answerTo, type Answer } from './answer';
import type { EntityFactory, TaskHandler } from '../step/handler-types';
import type { Parts } from '../parts';
import { BadRequestError } from '../errors/errors';
import { decodeKey } from '../keys/key-codec';
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';
import { REPEATED, singleHeader } from './single-header';
import { readPayload } from './payload';
import { isSignedBody } from './signed-body';
import { afterAnswer, beforeAnswer } from './unread-body';
import { TaskArrival } from './arrival';
import { Headers, type Authenticator } from '../types';
import type { Key } from '@google-cloud/datastore';
import type { SweepResult } from '../chain/sweep';
import { DEFAULT_SWEEP_MIN_INTERVAL, type TooEarly } from '../chain/sweep-gate';
import { ConfigError } from '../errors/errors';

/** Options of one `handle()` route. */
export interface HandleOptions {
  /** Kinds this route serves; a task for another kind is a 400. Defaults to any kind. */
  kinds?: readonly string[];
  /** Overrides the Locker's authenticator for this route. */
  authenticate?: Authenticator | false;
  /**
   * Largest body read, bytes. Defaults to 102 400 (100 KiB: Cloud Tasks sends at most 100 KB). A
   * larger body is answered 400 as soon as its `Content-Length` says so, or once that many bytes
   * were read: the rest is never read, and the answer closes the connection.
   */
  maxBodyBytes?: number;
}

/** Every option name of {@link HandleOptions}. */
const HANDLE_OPTION_NAMES: OptionNames<HandleOptions> = { kinds: true, authenticate: true, maxBodyBytes: true };
/** Options of the `sweepHandler()` route. */
export interface SweepHandlerOptions extends Pick<HandleOptions, 'authenticate'> {
  /**
   * The least time between the starts of two sweeps this route runs, ms: a call within it is
   * answered 429 with `Retry-After` and does nothing. A call while a sweep runs gets that sweep's
   * result (sweeps in one process never run side by side). Defaults to 10 000; 0 turns the
   * interval off.
   */
  minIntervalMs?: number;
}

const SWEEP_OPTION_NAMES: OptionNames<SweepHandlerOptions> = { authenticate: true, minIntervalMs: true };

/** `maxBodyBytes`' default: Cloud Tasks' largest task. */
export const DEFAULT_MAX_BODY = 100 * 1024;
const SEQ_PATTERN = /^[1-9][0-9]{0,14}$/;
const CHAIN_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** What the task and sweep routes read of the configuration: the logger and the authenticator. */
export const HTTP_SETTINGS = ['logger', 'authenticate'] as const satisfies readonly SettingName[];
export type HttpSettings = Settings<typeof HTTP_SETTINGS>;

/** What the task route uses: the parts an attempt uses, the drain and the events port, with the route's settings. */
export type TaskRouteParts = AttemptParts & Pick<Parts, 'drain' | 'emit'> & { readonly config: HttpSettings };

/** What the sweep route uses: its settings, and a sweep unless one started less than `minIntervalMs` ago (a function port). */
interface Sweeper {
  readonly config: HttpSettings;
  sweep(minIntervalMs: number): Promise<SweepResult> | TooEarly;
  /** Whether the Locker is shutting down: the route then answers 503 without sweeping. */
  stopping(): boolean;
}

export function handleMiddleware<E, P>(parts: TaskRouteParts, handler: TaskHandler<E, P>, factory: EntityFactory<E>, options: HandleOptions): RequestHandler {
  if (typeof handler !== 'function') throw new TypeError('handle(handler, factory): handler must be a function');
  if (typeof factory !== 'function') throw new TypeError('handle(handler, factory): factory must be a function (properties, key) => entity');
  rejectUnknownOptions('handle()', options, HANDLE_OPTION_NAMES);
  const kinds = options.kinds ? new Set(options.kinds) : undefined;
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  return (req, res) => {
    // The shutdown gate: one check per request. A stopping Locker takes no new step and touches no store.
    if (parts.drain.stopping) return answerTask(parts, req, res, DRAINING);
    const arrivedAt = performance.now(); // the step's time limit counts from here, as the platform's request timeout does
    parts.drain.track((async () => {
      // Neither admission nor the payload is awaited when it is at hand (no authenticator, a body
      // already read or empty): the store's read goes out without a turn of the event loop.
      let admission = admit(parts, req, options.authenticate);
      if (admission instanceof Promise) admission = await admission;
      if (admission.refused) return answerTask(parts, req, res, admission.refused);
      let arrival;
      try {
        const { key, seq, chain, resent } = parseLockHeaders(req);
        if (kinds && !kinds.has(key.kind)) throw new BadRequestError(`this route does not serve kind ${JSON.stringify(key.kind)}`);
        let payload = readPayload(req, maxBody);
        if (payload instanceof Promise) payload = await payload;
        if (admission.bodySha256 !== undefined && !isSignedBody(payload, admission.bodySha256)) {
          return answerTask(parts, req, res, unsignedBody(parts, req));
        }
        arrival = new TaskArrival(key, seq, chain, resent, payload, req, arrivedAt);
      } catch (error) {
        return answerTask(parts, req, res, rejected(parts, req, error));
      }
      answerTask(parts, req, res, answerTo(await runAttempt(parts, arrival, handler, factory)), arrival);
    })().catch((error: unknown) => {
      parts.config.logger.error('task request failed unexpectedly', { error: String(error) });
      if (!res.headersSent) answerTask(parts, req, res, answers.requestFailed());
    }));
  };
}

/** The answer of a stopping Locker: Cloud Tasks delivers the task again, to another instance. */
const DRAINING: Answer = answers.draining();

/** Sends a task route's answer; a non-2xx one is reported (`retryLater`) with its status and why. */
function answerTask(parts: Pick<Parts, 'drain' | 'emit'>, req: Request, res: Response, answer: Answer, arrival?: { key: Key; seq: number }): void {
  // Once stopping, answers end their connection: a keep-alive connection would carry more tasks to
  // this instance and keep its HTTP server from closing until the platform kills it.
  if (parts.drain.stopping && !res.headersSent) res.setHeader('Connection', 'close');
  beforeAnswer(req, res);
  send(res, answer);
  afterAnswer(req, res);
  if (answer.status >= 300) {
    parts.emit('retryLater', {
      status: answer.status, reason: answer.reason ?? 'internal', path: req.path,
      ...(arrival ? { key: arrival.key, seq: arrival.seq } : {}),
    });
  }
}

/**
 * The sweep route: POST (Cloud Scheduler) or GET (App Engine cron, which only sends GETs).
 *
 * A GET that changes state is safe here for two reasons. The sweep is idempotent: it re-sends only
 * the steps whose ledger record is due and pushes each record's due time forward, so a repeated or
 * early call does what the next scheduled sweep would have done, never a step twice (a step's task
 * is deduplicated by the Locker as any duplicate is). And a GET is accepted only when an
 * authenticator is in effect: the task authenticators read headers that a link, a prefetch, a
 * crawler or a cross-site page cannot make a browser send (a bearer token, `X-Appengine-*`, the
 * local dispatcher's signature). With `authenticate: false` the route takes POSTs only. (Behind
 * Identity-Aware Proxy, `iapAuthenticator` is satisfied by a signed-in browser: a page its user
 * visits could start a sweep, which still does no more than the next scheduled one.)
 */
export function sweepMiddleware(parts: Sweeper, options: SweepHandlerOptions): RequestHandler {
  rejectUnknownOptions('sweepHandler()', options, SWEEP_OPTION_NAMES);
  const minInterval = options.minIntervalMs ?? DEFAULT_SWEEP_MIN_INTERVAL;
  if (!Number.isSafeInteger(minInterval) || minInterval < 0) {
    throw new ConfigError(`sweepHandler({ minIntervalMs }): a whole number of ms ≥ 0; got ${String(options.minIntervalMs)}`);
  }
  return (req, res) => {
    void (async () => {
      let answer = admitSweep(parts, req, options.authenticate);
      if (answer instanceof Promise) answer = await answer;
      if (answer) return send(res, answer);
      if (parts.stopping()) {
        res.setHeader('Connection', 'close');
        return send(res, DRAINING);
      }
      try {
        const sweeping = parts.sweep(minInterval);
        if (!(sweeping instanceof Promise)) {
          parts.config.logger.info('sweep not started: the last one started less than minIntervalMs ago', { retryInMs: sweeping.retryInMs, minIntervalMs: minInterval });
          return send(res, answers.sweepTooEarly(sweeping.retryInMs));
        }
        res.status(200).json(await sweeping);
      } catch (error) {
        parts.config.logger.error('sweep failed', { error: String(error) });
        send(res, answers.sweepFailed());
      }
    })();
  };
}

/** Admits a sweep request: POST, or GET when an authenticator is in effect (see `sweepMiddleware`). */
function admitSweep(parts: { readonly config: HttpSettings }, req: Request, routeAuth: Authenticator | false | undefined): Answer | undefined | Promise<Answer | undefined> {
  const authenticate = routeAuth ?? parts.config.authenticate;
  if (req.method === 'GET' && authenticate === false) return answers.wrongMethod('a sweep without an authenticator takes POSTs only');
  if (req.method !== 'POST' && req.method !== 'GET') return answers.wrongMethod('a sweep is a POST (Cloud Scheduler) or a GET (App Engine cron)');
  if (authenticate === false) return undefined;
  return authenticated(parts, req, authenticate).then((admission) => admission.refused);
}

/** What admission says of a request: the refusal, or admitted, with the body hash its credential binds when it binds one. */
interface Admission {
  readonly refused?: Answer;
  readonly bodySha256?: string;
}

/** A request admitted without an authenticator: no credential, no body bound. */
const ADMITTED: Admission = Object.freeze({});

/** Authenticates a task request (a promise only when an authenticator runs). */
function admit(parts: { readonly config: HttpSettings }, req: Request, routeAuth: Authenticator | false | undefined): Admission | Promise<Admission> {
  if (req.method !== 'POST') return { refused: answers.wrongMethod('task requests are POSTs', 'method') };
  const authenticate = routeAuth ?? parts.config.authenticate;
  if (authenticate === false) return ADMITTED;
  return authenticated(parts, req, authenticate);
}

/** What the authenticator says of the request: admitted (with the body it binds, if any), or refused (a failing authenticator refuses). */
async function authenticated(parts: { readonly config: HttpSettings }, req: Request, authenticate: Authenticator): Promise<Admission> {
  try {
    const verdict = await authenticate({ method: req.method, url: req.originalUrl ?? req.url, headers: req.headers });
    if (verdict.ok) return verdict.bodySha256 === undefined ? ADMITTED : { bodySha256: verdict.bodySha256 };
    parts.config.logger.warn('task request refused', { status: verdict.status, reason: verdict.reason, path: req.path });
    return { refused: answers.unauthenticated(verdict.status) };
  } catch (error) {
    parts.config.logger.warn('task request refused: the authenticator failed', { error: String(error), path: req.path });
    return { refused: answers.unauthenticated() };
  }
}

/** The answer to a request whose credential binds another body than the one it carries: 401, logged. */
function unsignedBody(parts: { readonly config: HttpSettings }, req: Request): Answer {
  parts.config.logger.warn('task request refused', { status: 401, reason: 'the body is not the one its credential signed', path: req.path });
  return answers.unauthenticated(401);
}

/**
 * The key of `X-Lock-Key` as the Go library sends it: its tasks carry the key's JSON form
 * (`datastore.Key.MarshalJSON`), the encoded key in double quotes. This library sends it bare.
 */
function unquoted(raw: string): string {
  return raw.length >= 2 && raw.startsWith('"') && raw.endsWith('"') ? raw.slice(1, -1) : raw;
}

/** Reads `X-Lock-Key`, `X-Lock-Seq`, `X-Lock-Chain` and `X-Lock-Send`; throws `BadRequestError` on anything malformed. */
export function parseLockHeaders(req: Pick<Request, 'headers'>): { key: Key; seq: number; chain: string | undefined; resent: boolean } {
  const rawKey = single(req.headers[Headers.key]);
  const rawSend = single(req.headers[Headers.send]);
  const rawSeq = single(req.headers[Headers.seq]);
  const rawChain = single(req.headers[Headers.chain]);
  if (rawKey === undefined) throw new BadRequestError('X-Lock-Key is missing: this is not a task request');
  if (rawSeq === undefined) throw new BadRequestError('X-Lock-Seq is missing: this is not a task request');
  if (!SEQ_PATTERN.test(rawSeq)) throw new BadRequestError('X-Lock-Seq must be a positive whole number');
  if (rawChain !== undefined && !CHAIN_PATTERN.test(rawChain)) throw new BadRequestError('X-Lock-Chain is malformed');
  if (rawSend !== undefined && !SEQ_PATTERN.test(rawSend)) throw new BadRequestError('X-Lock-Send must be a positive whole number');
  return { key: decodeKey(unquoted(rawKey)), seq: Number(rawSeq), chain: rawChain, resent: rawSend !== undefined };
}

function single(value: string | string[] | undefined): string | undefined {
  const one = singleHeader(value);
  if (one === REPEATED) throw new BadRequestError('a lock header was sent more than once');
  return one;
}

function rejected(parts: { readonly config: HttpSettings }, req: Request, error: unknown): Answer {
  if (error instanceof BadRequestError) {
    parts.config.logger.warn('task request rejected', { reason: error.message, path: req.path });
    return answers.badRequest(error.message);
  }
  parts.config.logger.error('task request could not be read', { error: String(error), path: req.path });
  return answers.requestFailed();
}

function send(res: Response, answer: Answer): void {
  if (res.headersSent) return;
  // The answer is a short text for Cloud Tasks' logs: written as is, without the ETag and content
  // negotiation res.send() would spend time on.
  if (answer.retryAfter !== undefined) res.setHeader('Retry-After', String(answer.retryAfter));
  res.statusCode = answer.status;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(answer.message));
  res.end(answer.message);
}
