/**
 * A task's payload, whatever sits in front of `handle()`. Nobody read the body: it is read here.
 * A body parser read it: its result is used when it is the payload, its text when it kept one.
 * What the body holds decides, not the parser: any JSON value (`42`, `"x"`, `null`, arrays,
 * objects) under any content type, and form-encoded bodies (the Go library's tasks with
 * parameters) as an object of their fields.
 *
 * express.json() in its default strict mode refuses a body that is not an object or an array
 * before any route runs; `taskBodyRecovery()`, mounted right after it, hands such a task's text on
 * to the route instead (see docs/guides/getting-started.md, "Mounting").
 */
import type { ErrorRequestHandler, Request } from 'express';
import { BadRequestError } from '../errors/errors';
import { Headers, type Json } from '../types';
import { MAX_JSON_DEPTH, nestsDeeperThan, valueNestsDeeperThan } from './json-depth';

const FORM = /^application\/x-www-form-urlencoded\b/i;

/** Marks a request whose body text a recovery middleware kept (`taskBodyRecovery`). */
const RECOVERED = Symbol('datastore-locker.recoveredBody');
type Recovered = Request & { [RECOVERED]?: string };

/**
 * The payload of a task request; undefined when the body is empty. Throws `BadRequestError` for a
 * body that is not JSON. A promise only when the body is still to be read from the stream: a
 * body a parser read, or an empty one, is answered at once, so the step goes on without a turn of
 * the event loop.
 */
export function readPayload(req: Request, maxBytes: number): Json | undefined | Promise<Json | undefined> {
  const recovered = (req as Recovered)[RECOVERED];
  if (recovered !== undefined) return decode(recovered, req);
  // A body parser that ran has read the stream to its end; one that skipped the request (another content type) left it unread.
  if (!req.readableEnded) {
    const declared = Number(req.headers['content-length']);
    if (declared > maxBytes) {
      // Refused on what it says it is, before a byte of it is read.
      throw tooLarge(maxBytes);
    }
    if (emptyBody(req)) {
      // Nothing will come: let the stream end on its own instead of waiting for its 'end'.
      req.resume();
      return undefined;
    }
    return readBody(req, maxBytes).then((text) => decode(text, req));
  }
  const parsed: unknown = req.body;
  if (typeof parsed === 'string') return rawText(parsed, req) ? decode(parsed, req) : parsed;
  if (Buffer.isBuffer(parsed)) return decode(parsed.toString('utf8'), req);
  if (parsed === undefined) return undefined;
  // A parser (express.json(), express.urlencoded()) ran; it leaves {} for an empty body.
  if (isEmptyObject(parsed) && emptyBody(req)) return undefined;
  if (valueNestsDeeperThan(parsed)) throw tooDeep();
  return parsed as Json;
}

/**
 * Express error middleware to mount right after an app-wide `express.json()` in strict mode: a
 * task request (it has `X-Lock-Key`) whose body the parser refused as "not an object or array"
 * goes on to its route with the body's text, which `handle()` reads as any JSON value. Every other
 * error passes on unchanged.
 */
export function taskBodyRecovery(): ErrorRequestHandler {
  return (error: unknown, req, _res, next) => {
    const failure = error as { type?: unknown; body?: unknown } | null;
    const parseFailed = typeof failure === 'object' && failure !== null && failure.type === 'entity.parse.failed' && typeof failure.body === 'string';
    if (!parseFailed || req.headers[Headers.key] === undefined) return next(error);
    (req as Recovered)[RECOVERED] = failure.body as string;
    next();
  };
}

function decode(text: string, req: Request): Json | undefined {
  if (text.trim() === '') return undefined;
  if (FORM.test(String(req.headers['content-type'] ?? ''))) return formFields(text);
  if (nestsDeeperThan(text)) throw tooDeep();
  try {
    return JSON.parse(text) as Json;
  } catch {
    throw new BadRequestError('the body is not valid JSON (nor form-encoded)');
  }
}

/** A form-encoded body as an object: each field a string, or an array of strings when repeated. */
function formFields(text: string): { [name: string]: string | string[] } {
  const fields: { [name: string]: string | string[] } = {};
  for (const [name, value] of new URLSearchParams(text)) {
    const seen = fields[name];
    fields[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return fields;
}

/**
 * Whether a string body is the body's text (express.text()) rather than a JSON string a parser
 * already decoded (express.json({ strict: false })): the text is exactly as long as the body sent.
 * Without a length, it is the text when it reads as JSON.
 */
function rawText(body: string, req: Request): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined) return Buffer.byteLength(body) === Number(length);
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
}

/** body-parser marks a request whose body it read. */
function emptyBody(req: Request): boolean {
  return req.headers['content-length'] === '0';
}

function isEmptyObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
}

/**
 * Reads the body's text, and stops reading as soon as it is over `maxBytes`: the rest is dropped
 * up to a bound after the answer, or never read (`unread-body.ts`), so a large body costs no more
 * than the limit and that bound.
 */
function readBody(req: Request, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    if (req.readableEnded) return resolve('');
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= maxBytes) return void chunks.push(chunk);
      req.off('data', onData);
      req.off('end', onEnd);
      req.pause();
      chunks.length = 0;
      reject(tooLarge(maxBytes));
    };
    const onEnd = (): void => resolve(Buffer.concat(chunks).toString('utf8'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', (error) => reject(new BadRequestError('the body could not be read', { cause: error })));
  });
}

function tooLarge(maxBytes: number): BadRequestError {
  return new BadRequestError(`the body is larger than ${maxBytes} bytes`);
}

function tooDeep(): BadRequestError {
  return new BadRequestError(`the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
}
