/**
 * A schedule as the status router shows it (`locker.recurring()`; `GET /schedules`, its JSON and
 * the overview's section): the operator's view of its record, the ages of its next and last runs,
 * and the last run's entity encoded as the step page's `?key=` takes it. The HTML and the JSON are
 * both made from these rows. Dates are ISO text in JSON, never raw objects; the schedule's entity
 * and payload functions are code and never shown.
 */
import type { Key } from '@google-cloud/datastore';
import { parseKeyPath } from '../../keys/key-path-parse';
import type { KeyWriting } from '../../keys/key-writing';
import type { SchedulePage } from '../../recurring/operator';
import type { LastRun, ScheduleView } from '../../recurring/recurring-types';

/** One schedule's row. */
export interface ScheduleRow {
  view: ScheduleView & { declaredHere: boolean };
  /** The next tick from now, ms (negative: overdue); none while paused or removed. */
  nextInMs?: number;
  /** How long ago the last run's tick was, ms. */
  lastAgeMs?: number;
  /** The last run's entity as `X-Lock-Key` encodes it (the step page's `?key=`); none when the record names none, or a key this page cannot read. */
  lastEncodedKey?: string;
  /** The last run's entity as the store's users write it (a document's path on a `FirestoreStore`); none when `lastEncodedKey` is none. */
  lastKeyPath?: string;
}

/** One page of schedules, as the router shows it. */
export interface SchedulesView {
  now: number;
  rows: ScheduleRow[];
  /** More schedules follow: the next page's cursor. */
  cursor?: string;
  /** The cursor this page was read from (none: the first page). */
  from?: string;
}

/** The rows of a page of schedules read at `now`, each last run's key written by `writing`. */
export function scheduleRows(page: SchedulePage, now: number, writing: KeyWriting): SchedulesView {
  const rows = page.schedules.map((view): ScheduleRow => {
    const row: ScheduleRow = { view };
    if (view.next) row.nextInMs = view.next.getTime() - now;
    if (view.last) {
      row.lastAgeMs = Math.max(0, now - view.last.at.getTime());
      const key = keyOf(view.last);
      if (key !== undefined) {
        row.lastEncodedKey = writing.encode(key);
        row.lastKeyPath = writing.show(key);
      }
    }
    return row;
  });
  return page.cursor ? { now, rows, cursor: page.cursor } : { now, rows };
}

/** The last run's entity (the record keeps its key path); undefined when there is none or its text is not a key path. */
function keyOf(last: LastRun): Key | undefined {
  if (last.key === undefined) return undefined;
  try {
    return parseKeyPath(last.key, last.namespace);
  } catch {
    return undefined; // a record written by hand, or a key no task could carry: shown as text, unlinked
  }
}

/** What the operator can do to a schedule, as the page offers it: pause an active one, resume a paused one, run one this code declares. */
export type ScheduleAction = 'pause' | 'resume' | 'run-now';

/** The actions `view` allows, in the order the page shows them. */
export function scheduleActions(view: ScheduleView & { declaredHere: boolean }): ScheduleAction[] {
  const actions: ScheduleAction[] = [];
  if (view.state === 'active') actions.push('pause');
  if (view.state === 'paused') actions.push('resume');
  if (view.declaredHere) actions.push('run-now');
  return actions;
}

/** A schedule's row as JSON. */
export function scheduleJson(row: ScheduleRow): Record<string, unknown> {
  const v = row.view;
  const last = v.last;
  return {
    name: v.name, cron: v.cron, timeZone: v.timeZone, path: v.path, overlap: v.overlap, misfire: v.misfire,
    state: v.state, declaredHere: v.declaredHere,
    ...(v.next && { next: v.next.toISOString(), nextInMs: row.nextInMs }),
    ...(last && {
      last: {
        at: last.at.toISOString(), ageMs: row.lastAgeMs, outcome: last.outcome, settledAt: last.settledAt.toISOString(),
        ...(last.key !== undefined && { keyPath: row.lastKeyPath ?? last.key, namespace: last.namespace ?? '' }),
        ...(row.lastEncodedKey !== undefined && { encodedKey: row.lastEncodedKey }),
        ...(last.chain !== undefined && { chain: last.chain }),
        ...(last.error !== undefined && { error: last.error }),
      },
    }),
    ...(v.queued && { queued: v.queued.toISOString() }),
    started: v.started, skipped: v.skipped, declaredAt: v.declaredAt.toISOString(), actions: scheduleActions(v),
  };
}

/** A page of schedules as JSON (`/schedules.json`, and the overview's `schedules`). */
export function schedulesJson(view: SchedulesView): { schedules: Record<string, unknown>[]; cursor?: string } {
  return { schedules: view.rows.map(scheduleJson), ...(view.cursor !== undefined && { cursor: view.cursor }) };
}
