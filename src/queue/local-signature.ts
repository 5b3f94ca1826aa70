/**
 * How the local dispatcher proves that a task request comes from it, and for which step, route and
 * body. Every request carries `X-Locker-Expires` (when the signature stops being accepted, epoch
 * seconds: {@link LOCAL_SIGNATURE_TTL_MS} after the attempt is sent), `X-Locker-Body-SHA256` (the
 * body's SHA-256, lowercase hex) and `X-Locker-Signature`: the lowercase hex HMAC-SHA256, keyed
 * with the queue's secret, of
 *
 * ```text
 * "v2" "\n" <X-Locker-Expires> "\n" <path and query> "\n" <task name> "\n" <X-Lock-Key> "\n"
 * <X-Lock-Seq> "\n" <X-Lock-Chain> "\n" <X-Lock-Send> "\n" <X-Locker-Body-SHA256>
 * ```
 *
 * where the task name is the one sent in `X-CloudTasks-TaskName`, the path is the request's as
 * sent (`/tasks/step?x=1`), and a missing header counts as the empty string. A signature is good
 * for that route, that step of that chain and that send, for a short while: replayed on another
 * route, for another step or chain, or late, it is refused. The authenticator sees headers only:
 * it accepts with the signed body hash (`bodySha256`), and `handle()`, once it read the body, answers
 * 401 when the payload (as JSON: the body this queue sends) hashes otherwise, before the store is
 * read. For every queue, `handle()` also compares the body with the step's ledger record
 * (docs/concepts/security.md).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { REPEATED, singleHeader } from '../http/single-header';
import { Headers, type Authenticator, type AuthRequest, type AuthVerdict } from '../types';

/** The header that carries the signature (lowercase, as Node presents incoming headers). */
export const LOCAL_SIGNATURE_HEADER = 'x-locker-signature';

/** The header that carries when the signature expires, epoch seconds. */
export const LOCAL_EXPIRES_HEADER = 'x-locker-expires';

/** The header that carries the body's SHA-256, lowercase hex. */
export const LOCAL_BODY_HASH_HEADER = 'x-locker-body-sha256';

/** The Cloud Tasks header that carries the task's short name. */
export const TASK_NAME_HEADER = 'x-cloudtasks-taskname';

/** How long a signature is accepted after its attempt is sent, ms: the dispatcher and the app share a machine. */
export const LOCAL_SIGNATURE_TTL_MS = 5 * 60_000;

/** A secret: text (UTF-8) or raw bytes. */
export type LocalSecret = string | Uint8Array;

/** What the signature covers. */
export interface SignedParts {
  /** `X-Locker-Expires`: epoch seconds. */
  expires: string;
  /** The path and query the request is sent to. */
  path: string;
  taskName: string;
  key: string;
  seq: string;
  chain: string;
  send: string;
  /** `X-Locker-Body-SHA256`. */
  bodyHash: string;
}

/** The SHA-256 of a body, as `X-Locker-Body-SHA256` carries it. */
export function bodyHash(body: string | Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

/** The signature of one task request, as sent in `X-Locker-Signature`. */
export function signLocalTask(secret: LocalSecret, p: SignedParts): string {
  return createHmac('sha256', secret)
    .update(['v2', p.expires, p.path, p.taskName, p.key, p.seq, p.chain, p.send, p.bodyHash].join('\n'))
    .digest('hex');
}

/**
 * Checks the signature of an incoming request (its path and query, and its headers): accepts
 * exactly the requests whose `X-Locker-Signature` matches (compared in constant time) and has not
 * expired at `now` (epoch ms), with the signed body hash for `handle()` to check the body against;
 * refuses the rest with 401.
 */
export function verifyLocalSignature(secret: LocalSecret, request: Pick<AuthRequest, 'url' | 'headers'>, now: number = Date.now()): AuthVerdict {
  const { headers } = request;
  const given = headers[LOCAL_SIGNATURE_HEADER];
  if (given === undefined || given === '') return refuse(`missing ${LOCAL_SIGNATURE_HEADER} header`);
  if (typeof given !== 'string') return refuse(`more than one ${LOCAL_SIGNATURE_HEADER} header`);
  const parts = {
    expires: single(headers[LOCAL_EXPIRES_HEADER]),
    path: request.url,
    taskName: single(headers[TASK_NAME_HEADER]),
    key: single(headers[Headers.key]),
    seq: single(headers[Headers.seq]),
    chain: single(headers[Headers.chain]),
    send: single(headers[Headers.send]),
    bodyHash: single(headers[LOCAL_BODY_HASH_HEADER]),
  };
  if (Object.values(parts).some((value) => value === undefined)) return refuse('a signed header is repeated');
  const expected = Buffer.from(signLocalTask(secret, parts as SignedParts), 'hex');
  const actual = /^[0-9a-f]{64}$/i.test(given) ? Buffer.from(given, 'hex') : undefined;
  if (actual === undefined || !timingSafeEqual(actual, expected)) {
    return refuse(`${LOCAL_SIGNATURE_HEADER} does not match`);
  }
  if (!/^\d{1,12}$/.test(parts.expires!) || Number(parts.expires) * 1000 < now) return refuse('the signature has expired');
  return { ok: true, bodySha256: parts.bodyHash!.toLowerCase() };
}

/** An authenticator that accepts the requests signed with `secret`. */
export function localAuthenticator(secret: LocalSecret): Authenticator {
  return (req) => verifyLocalSignature(secret, req);
}

/** The signed headers of one attempt: expiry, body hash and signature. */
export function signedHeaders(secret: LocalSecret, request: { path: string; headers: Record<string, string>; body: string | Uint8Array }, now: number = Date.now()): Record<string, string> {
  const expires = String(Math.ceil((now + LOCAL_SIGNATURE_TTL_MS) / 1000));
  const hash = bodyHash(request.body);
  const h = request.headers;
  const signature = signLocalTask(secret, {
    expires, path: request.path, taskName: h[TASK_NAME_HEADER] ?? '', key: h[Headers.key] ?? '', seq: h[Headers.seq] ?? '',
    chain: h[Headers.chain] ?? '', send: h[Headers.send] ?? '', bodyHash: hash,
  });
  return { [LOCAL_EXPIRES_HEADER]: expires, [LOCAL_BODY_HASH_HEADER]: hash, [LOCAL_SIGNATURE_HEADER]: signature };
}

/** A header's only value ('' when absent), or undefined when it is repeated. */
function single(value: string | string[] | undefined): string | undefined {
  const one = singleHeader(value);
  return one === REPEATED ? undefined : (one ?? '');
}

function refuse(reason: string): AuthVerdict {
  return { ok: false, status: 401, reason };
}
