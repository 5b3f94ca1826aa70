/**
 * Kickoff and fan-out rows as the status router's JSON shows them (`/kickoffs.json`,
 * `/kickoff.json`, `/fanouts.json`, `/fanout.json`): keys as path, `X-Lock-Key` encoding and
 * namespace, never raw key objects; dates as ISO text.
 */
import type { EntityRef, FanOutRow, KickoffRow, OldestPending } from '../inspect/runs';

function keyJson(ref: EntityRef): { keyPath: string; encodedKey: string; namespace: string } {
  return { keyPath: ref.keyPath, encodedKey: ref.encodedKey, namespace: ref.key.namespace ?? '' };
}

function oldestJson(o: OldestPending | undefined): Record<string, unknown> {
  return o ? { oldestPending: { ...keyJson(o), since: o.since.toISOString(), ageMs: o.ageMs } } : {};
}

/** A kickoff row as JSON. */
export function kickoffJson(r: KickoffRow): Record<string, unknown> {
  return {
    kickoffId: r.kickoffId, run: r.run, state: r.state, kinds: r.kinds, startedAt: r.startedAt.toISOString(), ageMs: r.ageMs,
    ...(r.finishedAt && { finishedAt: r.finishedAt.toISOString() }), calls: r.calls, ...(r.settled && { settled: r.settled }),
    progress: r.progress, ...oldestJson(r.oldestPending),
  };
}

/** A fan-out row as JSON. */
export function fanOutJsonRow(r: FanOutRow): Record<string, unknown> {
  return {
    id: r.id, run: r.run, state: r.state, parent: keyJson(r.parent), chain: r.chain, seq: r.seq, kinds: r.kinds,
    createdAt: r.createdAt.toISOString(), ageMs: r.ageMs, ...(r.sealedAt && { sealedAt: r.sealedAt.toISOString() }),
    ...(r.joinedAt && { joinedAt: r.joinedAt.toISOString() }), ...(r.outcome !== undefined && { outcome: r.outcome }),
    ...(r.atJoin && { atJoin: r.atJoin }), progress: r.progress, ...oldestJson(r.oldestPending),
  };
}
