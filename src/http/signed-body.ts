/**
 * The body a credential binds: an authenticator that accepts with `bodySha256` (`LocalQueue`'s
 * signature, over `X-Locker-Body-SHA256`) vouches for that body only. The task route checks it
 * once the body is read, whatever read it (the route itself, or `express.json()` in front): the
 * payload as JSON is the body the queue sent (`JSON.stringify` of the scheduled payload, '' for
 * none), so its hash must be the one signed.
 */
import { createHash } from 'node:crypto';
import type { Json } from '../types';

/** True when the payload, as the JSON body a queue sends for it, hashes to `sha256` (lowercase hex). */
export function isSignedBody(payload: Json | undefined, sha256: string): boolean {
  const body = payload === undefined ? '' : JSON.stringify(payload);
  return createHash('sha256').update(body).digest('hex') === sha256;
}
