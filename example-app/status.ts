/**
 * The state of the example's chains, read through the library's operator view (`locker.inspect()`:
 * indexed queries on the chain kinds, no registry of its own) and the side-effect records of each
 * step. Served as JSON at /status.json; the page at / is the library's status router, with the
 * side effects as an extra column ({@link sideEffectsColumn}).
 */
import { type AnswerReason, type InspectState, type Locker, type StatusColumn, type StepSummary } from '../src/index';
import type { Records, StepRecord } from './records';

/** The kinds of the example's chain entities. */
export const CHAIN_KINDS = ['Counter', 'Order', 'LineOrder', 'LineItem'] as const;

/** A chain's state: the library's view of its current step (`running` is a scheduled step whose lease is held). */
export type ChainState = InspectState;

/** One step of a chain. */
export interface StepStatus {
  seq: number;
  /** Times the step's side effect ran. */
  runs: number;
  /** Times the step's handler was entered (a failed attempt counts). */
  attempts: number;
  /** Duplicate deliveries of the step that were dropped. */
  dropped: number;
  /** The side effect, e.g. `charged`. */
  effect: string;
}

/** One chain. */
export interface ChainStatus {
  /** The entity's key path, e.g. `Counter:"counter-1a2b3c4d"`. */
  key: string;
  /** The key as `X-Lock-Key` encodes it (the status page's `/step?key=`). */
  encodedKey: string;
  kind: string;
  /** `lock_seq`: the current step (one past the last step once complete). */
  seq: number;
  state: ChainState;
  /** An attempt holds a lease it stopped renewing. */
  staleLease: boolean;
  /** No progress for stallAfter while scheduled. */
  stalled: boolean;
  /** The attempt holding the lease, if any. */
  holder: string;
  /** Failed attempts of the current step. */
  retries: number;
  /** The first line of the current step's last error, if any. */
  lastError: string;
  /** When the lock was last written (ISO 8601). */
  lastProgressAt: string;
  steps: StepStatus[];
}

export interface Status {
  chains: ChainStatus[];
  /**
   * The lists cut at {@link PER_STATE} chains: each names its next page (`/status.json?kind=&state=&cursor=`),
   * so nothing is left out without saying so. Empty when every chain is listed.
   */
  cut: CutList[];
}

/** A list of chains of one kind and state that goes on past this answer. */
export interface CutList {
  kind: string;
  state: InspectState;
  /** The next page: `/status.json?kind=…&state=…&cursor=…`. */
  next: string;
}

/** One page of one kind and state (`/status.json?kind=&state=&cursor=`). */
export interface ListPage {
  kind: string;
  state: InspectState;
  /** Where this page started. */
  cursor?: string;
}

/**
 * The task routes' non-2xx answers since the app started, by why and by status (the Locker's
 * `retryLater` event): each is a delivery Cloud Tasks makes again, and 429 and 5xx slow the queue.
 */
export interface AnswerCounts {
  total: number;
  byReason: Partial<Record<AnswerReason, number>>;
  byStatus: Record<string, number>;
}

/** Counts the Locker's non-2xx answers from now on; call the result to read the counts. */
export function countAnswers(locker: Locker): () => AnswerCounts {
  const counts: AnswerCounts = { total: 0, byReason: {}, byStatus: {} };
  locker.on('retryLater', ({ status, reason }) => {
    counts.total += 1;
    counts.byReason[reason] = (counts.byReason[reason] ?? 0) + 1;
    counts.byStatus[status] = (counts.byStatus[status] ?? 0) + 1;
  });
  return () => ({ total: counts.total, byReason: { ...counts.byReason }, byStatus: { ...counts.byStatus } });
}

/** Chains listed per kind and state in one answer; a longer list says so and names its next page. */
export const PER_STATE = 100;

/**
 * The states to list, in the order time alone moves a step between them (a waiting step becomes
 * stalled; a running one's lease goes stale, then stalls), so that a step that moves while the
 * lists are read is found in the later list instead of in neither. A stale lease is its own state
 * until it stalls: a process killed inside a handler leaves one for `stallAfter - leaseDuration`.
 */
const LIST_ORDER: readonly InspectState[] = ['scheduled', 'running', 'stale', 'stalled', 'failed', 'complete', 'cancelled'];

/**
 * Reads the chains of the example's kinds, newest progress first: up to {@link PER_STATE} of each
 * kind and state, the lists cut there named in `cut`; or, given `page`, one page of one list.
 */
export async function readStatus(locker: Locker, records: Records, page?: ListPage): Promise<Status> {
  const inspector = locker.inspect();
  const byKey = new Map<string, StepSummary>();
  const cut: CutList[] = [];
  const lists = page ? [{ kind: page.kind, state: page.state }] : CHAIN_KINDS.flatMap((kind) => LIST_ORDER.map((state) => ({ kind, state })));
  for (const { kind, state } of lists) {
    const found = await inspector.list({ state, kind, namespace: records.namespace ?? '', order: 'newest', limit: PER_STATE, ...(page?.cursor ? { cursor: page.cursor } : {}) });
    for (const step of found.steps) byKey.set(step.keyPath, step); // a step found twice moved on: the later view wins
    if (found.cursor) cut.push({ kind, state, next: `/status.json?${new URLSearchParams({ kind, state, cursor: found.cursor }).toString()}` });
  }
  const found = [...byKey.values()];
  found.sort((a, b) => (b.lastProgressAt?.getTime() ?? 0) - (a.lastProgressAt?.getTime() ?? 0));
  const chains = await Promise.all(found.map(async (s) => ({
    key: s.keyPath,
    encodedKey: s.encodedKey,
    kind: s.kind,
    seq: s.seq,
    state: s.state ?? 'scheduled',
    staleLease: s.staleLease,
    stalled: s.stalled,
    holder: s.holder ?? '',
    retries: s.tries,
    lastError: s.errorMessage ?? '',
    lastProgressAt: s.lastProgressAt?.toISOString() ?? '',
    steps: await stepsOf(records, s),
  } satisfies ChainStatus)));
  return { chains, cut };
}

/** The status page's extra column: each step's side effect and how often it ran. */
export function sideEffectsColumn(records: Records): StatusColumn {
  return {
    title: 'Side effects',
    value: async (step) => (await stepsOf(records, step)).map(describeStep).join(' · ') || '—',
  };
}

async function stepsOf(records: Records, s: StepSummary): Promise<StepStatus[]> {
  return (await records.steps(s.key, s.seq)).map(({ seq, runs, attempts, dropped, effect }: StepRecord) => ({ seq, runs, attempts, dropped, effect }));
}

/** e.g. `6 counted ×1 (1 duplicate dropped)`, `1 charged ×1 (2 attempts)`. */
export function describeStep(step: StepStatus): string {
  const verb = step.effect.split(' ')[0] ?? '';
  const notes: string[] = [];
  if (step.attempts > step.runs) notes.push(`${step.attempts} attempts`);
  if (step.dropped > 0) notes.push(`${step.dropped} duplicate${step.dropped === 1 ? '' : 's'} dropped`);
  return `${step.seq} ${verb} ×${step.runs}${notes.length > 0 ? ` (${notes.join(', ')})` : ''}`;
}
