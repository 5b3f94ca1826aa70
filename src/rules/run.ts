/**
 * `lock_run`: which tracked work started an entity's current chain, as a short string stored on
 * the lock (docs/design.md, section 3). A bulk kickoff writes `k:<kickoff id>` (an id longer than
 * {@link MAX_PLAIN_ID} characters is stored as `k#<22 characters of its SHA-256>`, so the field stays
 * short whatever the caller named the kickoff); a fan-out's child `f:<fan-out id>` (24 hex digits).
 * The prefixes keep a kickoff and a fan-out from ever sharing a value. A chain `schedule()` started
 * has none.
 */
import { createHash } from 'node:crypto';

/** The longest kickoff id stored as it is. */
export const MAX_PLAIN_ID = 64;

/** What a `lock_run` value names. */
export type RunRef = { kind: 'kickoff'; run: string } | { kind: 'fanOut'; id: string; run: string };

/** The `lock_run` of the chains kickoff `kickoffId` starts. */
export function kickoffRun(kickoffId: string): string {
  if (kickoffId.length <= MAX_PLAIN_ID) return `k:${kickoffId}`;
  return `k#${createHash('sha256').update(kickoffId).digest('base64url').slice(0, 22)}`;
}

/** The `lock_run` of the children of fan-out `id`. */
export function fanOutRun(id: string): string {
  return `f:${id}`;
}

/** The fan-out a `lock_run` names, if it names one. */
export function fanOutOfRun(run: string | undefined): string | undefined {
  return run?.startsWith('f:') ? run.slice(2) : undefined;
}
