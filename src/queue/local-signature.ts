/**
 * How the local dispatcher proves that a task request comes from it: every request carries
 * `X-Locker-Signature`, the lowercase hex HMAC-SHA256, keyed with the queue's secret, of
 *
 * ```text
 * <task name> "\n" <X-Lock-Key> "\n" <X-Lock-Seq>
 * ```
 *
 * where the task name is the one sent in `X-CloudTasks-TaskName` and a missing header counts as
 * the empty string. The signature binds a request to one step of one entity; it does not cover
 * the body and does not expire, which is enough for a dispatcher that lives in the app's own
 * process and talks to it over loopback. Production queues authenticate with OIDC instead.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { REPEATED, singleHeader } from '../http/single-header';
import { Headers, type Authenticator, type AuthVerdict } from '../types';

/** The header that carries the signature (lowercase, as Node presents incoming headers). */
export const LOCAL_SIGNATURE_HEADER = 'x-locker-signature';

/** The Cloud Tasks header that carries the task's short name. */
export const TASK_NAME_HEADER = 'x-cloudtasks-taskname';

/** A secret: text (UTF-8) or raw bytes. */
export type LocalSecret = string | Uint8Array;

/** What the signature covers. */
export interface SignedParts {
  taskName: string;
  key: string;
  seq: string;
}

/** The signature of one task request, as sent in `X-Locker-Signature`. */
export function signLocalTask(secret: LocalSecret, parts: SignedParts): string {
  return createHmac('sha256', secret).update(`${parts.taskName}\n${parts.key}\n${parts.seq}`).digest('hex');
}

/**
 * Checks the signature of an incoming request's headers: accepts exactly the requests whose
 * `X-Locker-Signature` matches (compared in constant time), refuses the rest with 401.
 */
export function verifyLocalSignature(secret: LocalSecret, headers: IncomingHttpHeaders): AuthVerdict {
  const given = headers[LOCAL_SIGNATURE_HEADER];
  if (given === undefined || given === '') return refuse(`missing ${LOCAL_SIGNATURE_HEADER} header`);
  if (typeof given !== 'string') return refuse(`more than one ${LOCAL_SIGNATURE_HEADER} header`);
  const parts = {
    taskName: single(headers[TASK_NAME_HEADER]),
    key: single(headers[Headers.key]),
    seq: single(headers[Headers.seq]),
  };
  if (parts.taskName === undefined || parts.key === undefined || parts.seq === undefined) {
    return refuse('a signed header is repeated');
  }
  const expected = Buffer.from(signLocalTask(secret, parts as SignedParts), 'hex');
  const actual = /^[0-9a-f]{64}$/i.test(given) ? Buffer.from(given, 'hex') : undefined;
  if (actual === undefined || !timingSafeEqual(actual, expected)) {
    return refuse(`${LOCAL_SIGNATURE_HEADER} does not match`);
  }
  return { ok: true };
}

/** An authenticator that accepts the requests signed with `secret`. */
export function localAuthenticator(secret: LocalSecret): Authenticator {
  return (req) => verifyLocalSignature(secret, req.headers);
}

/** A header's only value ('' when absent), or undefined when it is repeated. */
function single(value: string | string[] | undefined): string | undefined {
  const one = singleHeader(value);
  return one === REPEATED ? undefined : (one ?? '');
}

function refuse(reason: string): AuthVerdict {
  return { ok: false, status: 401, reason };
}
