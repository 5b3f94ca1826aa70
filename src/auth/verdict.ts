/**
 * The two answers an authenticator gives, built in one place so every authenticator words them
 * the same way.
 */
import type { AuthVerdict } from '../types';

/** The request comes from the task queue. */
export const ACCEPT: AuthVerdict = Object.freeze({ ok: true });

/**
 * The request is refused: 401 when credentials are missing or do not verify, 403 when they
 * verify but name a caller that is not allowed. `reason` says which check failed.
 */
export function refuse(status: 401 | 403, reason: string): AuthVerdict {
  return { ok: false, status, reason };
}
