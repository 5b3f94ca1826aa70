/**
 * What the status router shows, as plain data: sections of steps (one per kind, namespace and
 * state) and one step's detail. The HTML page and the JSON answers are both made from these.
 */
import { fanOutJsonRow } from './run-json';
import { fanOutJson } from '../../fanout/view';
import type { KindCounts, SearchHit, StepDetail } from '../inspect/inspector';
import type { QueueDepth } from '../../types';
import type { OperationView } from '../bulk/view';
import type { Throughput } from '../inspect/throughput';
import type { FanOutRow, KickoffRow } from '../inspect/runs';
import type { InspectState, StepSummary } from '../inspect/step-view';
import type { SchedulesView } from './schedule-view';

/** The actions a step in this state allows, in the order the page shows them. */
export type ActionName = 'retry' | 'resend' | 'cancel';

/** One listed step, with its extra columns and what can be done to it. */
export interface StepRow {
  step: StepSummary;
  extra: Record<string, string>;
  actions: ActionName[];
}

/** The steps of one kind and namespace in one state. */
export interface Section {
  kind: string;
  namespace: string;
  state: InspectState;
  /** The order the section was read in (its cursor goes on in the same order). */
  order: 'oldest' | 'newest';
  rows: StepRow[];
  /** Set when more steps follow: the next page's cursor. */
  cursor?: string;
}

/** The page's filters, as the query string gave them (checked). */
export interface Filters {
  kind?: string;
  namespace?: string;
  state?: InspectState;
  order: 'oldest' | 'newest';
  cursor?: string;
  /** Only the chains of this bulk kickoff (`?kickoff=`). */
  kickoff?: string;
}

/** A list page. */
export interface ListView {
  now: number;
  filters: Filters;
  sections: Section[];
  /** On the overview, when the store counts: the numbers per kind and namespace. */
  counts?: KindCounts[];
  /** On the overview: steps finished per minute over the last hour, from the chains' histories. */
  throughput?: Throughput;
  /** On the overview: the latest bulk kickoffs, with their progress. */
  kickoffs?: KickoffRow[];
  /** On the overview: the latest fan-outs (joined ones included), with their progress. */
  fanOuts?: FanOutRow[];
  /** On the overview: the latest bulk operations, with their progress. */
  operations?: OperationView[];
  /** What the queue holds now, when it can tell. */
  queue?: QueueDepth;
  /** On the overview: entities that owe an alert, found among the ledger records due (`cut`: more were due than read). */
  owed?: { rows: StepRow[]; cut: boolean };
  /** On the overview: the first page of schedules (`locker.recurring()`), with their next and last runs. */
  schedules?: SchedulesView;
}

/** A detail page. */
export interface DetailView {
  now: number;
  step: StepDetail;
  extra: Record<string, string>;
  actions: ActionName[];
  /** The action just done, to confirm it (`?done=`). */
  done?: ActionName;
}

/** A search's answer page. */
export interface SearchView {
  now: number;
  /** The text searched, as typed. */
  text: string;
  hits: SearchHit[];
  /** The kickoff the text names, when it is one (`scheduleMany()` left its record). */
  kickoff?: string;
}

/** Retry for a failed step; re-send and cancel while scheduled (running, stale or stalled included). */
export function actionsFor(step: StepSummary): ActionName[] {
  if (step.state === 'failed') return ['retry'];
  if (step.state === 'scheduled' || step.state === 'running' || step.state === 'stale' || step.state === 'stalled') return ['resend', 'cancel'];
  return [];
}

/** A step as JSON: dates as ISO text, the key (and a fan-out's child keys) as its path, encoding and namespace. */
export function stepJson(step: StepSummary | StepDetail, extra: Record<string, string>, actions: ActionName[]): Record<string, unknown> {
  const { key: _key, lastProgressAt, properties, ...rest } = step;
  return {
    ...rest,
    ...('fanOut' in step && step.fanOut ? { fanOut: fanOutJson(step.fanOut) } : {}),
    ...('fanOuts' in step ? { fanOuts: step.fanOuts.map(fanOutJsonRow) } : {}),
    ...('parent' in step && step.parent
      ? { parent: { fanOut: step.parent.fanOut, keyPath: step.parent.keyPath, encodedKey: step.parent.encodedKey, namespace: step.parent.key.namespace ?? '' } }
      : {}),
    namespace: step.namespace ?? '',
    lastProgressAt: lastProgressAt?.toISOString(),
    ...('startedAt' in step ? { startedAt: step.startedAt?.toISOString() } : {}),
    properties: plain(properties),
    extra,
    actions,
  };
}

/** Properties as JSON can hold them: bigints and Datastore numbers as text, buffers summarised. */
function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_name, v: unknown) => {
    if (typeof v === 'bigint') return v.toString();
    if (Buffer.isBuffer(v)) return `[${v.length} bytes]`;
    if (typeof v === 'object' && v !== null && 'type' in v && 'data' in v && (v as { type: unknown }).type === 'Buffer') return '[bytes]';
    return v;
  }) ?? 'null');
}
