/**
 * A chain's history on its lock (`lock_hist`, unindexed): the last `HISTORY_STEPS` steps of the
 * entity's chains, newest first, as one compact string, written only by the lock transitions
 * (`transitions.ts`), so it rides on writes that write the entity anyway: no RPC, no extra write.
 *
 * The take (or a takeover) opens the step's entry (`running`: its route, when the attempt began);
 * the step's end closes it (`next`, `complete`, `failed`, `cancelled`: how long the attempt took, the
 * attempts it took). A release for a retry leaves it open; the next take restarts it.
 *
 * One line per entry, fields split by single spaces, the route last (cut, and made printable ASCII
 * without spaces, so it never holds a separator):
 *
 *     <seq> <outcome> <started ms since epoch | -> <took ms | -> <attempts> <takeover 0|1> <route>
 *
 * An entry is at most `ENTRY_MAX_BYTES`, the field at most `HISTORY_MAX_BYTES`: the oldest entries
 * are cut, never the write. Anything else stored under the name (the Go library's entities have
 * none) reads as no history. The history holds no payload and no error text.
 */

/** How many steps the lock keeps. */
export const HISTORY_STEPS = 10;

/** The longest route an entry keeps, in characters (ASCII: one byte each); a longer one is cut and ends in `...`. */
export const ROUTE_MAX_CHARS = 100;

/** How a step's entry ended, or `running` while it is open. */
export type StepOutcome = 'running' | 'next' | 'complete' | 'failed' | 'cancelled';

const OUTCOMES: ReadonlySet<string> = new Set<StepOutcome>(['running', 'next', 'complete', 'failed', 'cancelled']);

/**
 * The longest entry: a sequence and attempts up to 16 digits each, the longest outcome (9), two
 * times up to 13 digits each, the takeover flag, the route, six spaces and its line break.
 */
export const ENTRY_MAX_BYTES = 16 + 9 + 13 + 13 + 16 + 1 + ROUTE_MAX_CHARS + 7;

/** The field's bound: `HISTORY_STEPS` of the longest entries (1,750 bytes). */
export const HISTORY_MAX_BYTES = HISTORY_STEPS * ENTRY_MAX_BYTES;

/** One step of a chain's history. */
export interface HistoryEntry {
  /** The step's sequence number (`lock_seq`). */
  seq: number;
  /** How it ended; `running` for the step an attempt holds or a retry waits on. */
  outcome: StepOutcome;
  /** The path its tasks were sent to; '' when not known (the step never ran: cancelled before a take). */
  route: string;
  /** When its last attempt began (the take's time); undefined when it never ran. */
  startedAt?: Date;
  /** How long its last attempt took, ms (from the take to the write that ended the step). */
  tookMs?: number;
  /** The attempts it took (failed ones + 1; those a cancel stopped counted as made). */
  attempts: number;
  /** A lease of the step was overwritten (an attempt crashed, hung or was cut off). */
  takeover: boolean;
}

/** The stored history, checked: the field's string when it is one within the bound, else ''. */
export function storedHistory(value: unknown): string {
  return typeof value === 'string' && value.length <= HISTORY_MAX_BYTES ? value : '';
}

/**
 * The history with the step `seq`'s entry opened by an attempt that took its lease at `now` on
 * `route`: the step's open entry restarted (a takeover kept), or a new one added.
 */
export function opened(hist: string, e: { seq: number; route: string; now: Date; takeover: boolean }): string {
  const head = headOf(hist);
  const open = head.entry?.outcome === 'running' && head.entry.seq === e.seq ? head.entry : undefined;
  const entry: HistoryEntry = {
    seq: e.seq, outcome: 'running', route: cutRoute(e.route), startedAt: e.now, attempts: 0, takeover: e.takeover || (open?.takeover ?? false),
  };
  return bounded(encodeEntry(entry), open ? head.rest : hist);
}

/**
 * The history with step `seq` ended `outcome` at `now` after `attempts`: its open entry closed (the
 * time it took counted from its take), or an entry without route or times added when it has none.
 */
export function closed(hist: string, e: { seq: number; outcome: Exclude<StepOutcome, 'running'>; now: Date; attempts: number; takeover?: boolean }): string {
  const head = headOf(hist);
  const open = head.entry?.outcome === 'running' && head.entry.seq === e.seq ? head.entry : undefined;
  const entry: HistoryEntry = { seq: e.seq, outcome: e.outcome, route: open?.route ?? '', attempts: e.attempts, takeover: (open?.takeover ?? false) || (e.takeover ?? false) };
  if (open?.startedAt) {
    entry.startedAt = open.startedAt;
    entry.tookMs = Math.max(0, e.now.getTime() - open.startedAt.getTime());
  }
  return bounded(encodeEntry(entry), open ? head.rest : hist);
}

/** Whether the history's newest entry is step `seq`'s, open (an attempt began it and nothing ended it). */
export function isOpen(hist: string, seq: number): boolean {
  const head = headOf(hist).entry;
  return head?.outcome === 'running' && head.seq === seq;
}

/** The entries of a stored history, newest first; a line that does not read is left out. */
export function readHistory(hist: string): HistoryEntry[] {
  if (hist === '') return [];
  const out: HistoryEntry[] = [];
  for (const line of hist.split('\n')) {
    const entry = decodeEntry(line);
    if (entry) out.push(entry);
  }
  return out;
}

/** `entry`'s line. */
export function encodeEntry(entry: HistoryEntry): string {
  const started = entry.startedAt ? String(entry.startedAt.getTime()) : '-';
  const took = entry.tookMs !== undefined ? String(Math.round(entry.tookMs)) : '-';
  return `${entry.seq} ${entry.outcome} ${started} ${took} ${entry.attempts} ${entry.takeover ? 1 : 0} ${cutRoute(entry.route)}`;
}

/** The route as an entry keeps it: printable ASCII without spaces, at most `ROUTE_MAX_CHARS`. */
export function cutRoute(route: string): string {
  const clean = route.replace(/[^\x21-\x7e]/g, '?');
  return clean.length > ROUTE_MAX_CHARS ? `${clean.slice(0, ROUTE_MAX_CHARS - 3)}...` : clean;
}

/** `line` on top of `rest`, cut to `HISTORY_STEPS` entries and `HISTORY_MAX_BYTES`: the oldest go. */
function bounded(line: string, rest: string): string {
  let out = line;
  let count = 1;
  let from = 0;
  while (from < rest.length && count < HISTORY_STEPS) {
    const end = rest.indexOf('\n', from);
    const next = end === -1 ? rest.slice(from) : rest.slice(from, end);
    if (out.length + 1 + next.length > HISTORY_MAX_BYTES) break;
    if (next !== '') {
      out += `\n${next}`;
      count++;
    }
    if (end === -1) break;
    from = end + 1;
  }
  return out;
}

/** The newest entry, and the lines after it. */
function headOf(hist: string): { entry: HistoryEntry | undefined; rest: string } {
  if (hist === '') return { entry: undefined, rest: '' };
  const end = hist.indexOf('\n');
  return end === -1 ? { entry: decodeEntry(hist), rest: '' } : { entry: decodeEntry(hist.slice(0, end)), rest: hist.slice(end + 1) };
}

function decodeEntry(line: string): HistoryEntry | undefined {
  const parts = line.split(' ');
  if (parts.length !== 7) return undefined;
  const [seq, outcome, started, took, attempts, takeover, route] = parts as [string, string, string, string, string, string, string];
  const n = count(seq);
  const tries = count(attempts);
  if (n === undefined || tries === undefined || !OUTCOMES.has(outcome) || (takeover !== '0' && takeover !== '1')) return undefined;
  const entry: HistoryEntry = { seq: n, outcome: outcome as StepOutcome, route, attempts: tries, takeover: takeover === '1' };
  const at = started === '-' ? undefined : count(started);
  const ms = took === '-' ? undefined : count(took);
  if (at !== undefined) entry.startedAt = new Date(at);
  if (ms !== undefined) entry.tookMs = ms;
  return entry;
}

function count(text: string): number | undefined {
  if (!/^\d{1,16}$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}
