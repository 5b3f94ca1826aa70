/**
 * The broken promises known on today's main, each as the short sequence of model commands that
 * shows it (the six defects of issue 26, and one the model found on its own). Each names the
 * promise the oracle finds broken. Set `fixed` once the fix is merged: the sequence must then
 * hold every promise (test/promises/model.test.ts checks both ways).
 */
import { Advance, Alerter, Deliver, Kickoff, KickoffMany, Operate, Release, Shutdown, type Command, type Feature, type Plan } from './commands';
import { TIMINGS } from './instance';
import type { Promise4 } from './oracle';
import type { SequenceConfig } from './world';

/** One known broken promise. */
export interface KnownDefect {
  /** Issue 26's number for it, or `model` for one the model found on its own. */
  id: string;
  title: string;
  /** The promise the oracle finds broken while it is not fixed. */
  promise: Promise4;
  /** Whether the fix is merged (the sequence must then hold every promise). */
  fixed: boolean;
  config: SequenceConfig;
  commands(): Command[];
}

const PLAIN_CONFIG: SequenceConfig = Object.freeze({ instances: 2, alerter: 'record', maxRetries: 3 });
const run = (finish: Plan['finish']): Plan => ({ finish, block: 'none', onSignal: 'stop-before' });
const blocked = (finish: Plan['finish'], onSignal: Plan['onSignal'] = 'stop-before'): Plan => ({ finish, block: 'before-effect', onSignal });
const PAST_LEASE = TIMINGS.leaseDuration + 1_000;

/** Every known broken promise; `fixed` says which are fixed on this branch. */
export const KNOWN_DEFECTS: readonly KnownDefect[] = [
  {
    id: '1', title: 'a kickoff drops a failure alert still owed', promise: 'c', fixed: true, config: PLAIN_CONFIG,
    commands: () => [new Kickoff('e0', 0), new Alerter(false), new Deliver(0, 0, run('permanent'), false), new Kickoff('e0', 0)],
  },
  {
    id: '1', title: 'scheduleMany() drops an overwrite alert still owed', promise: 'c', fixed: true, config: PLAIN_CONFIG,
    commands: () => [
      new Alerter(false), new Kickoff('e0', 0), new Deliver(0, 0, blocked('return'), false), new Advance(PAST_LEASE),
      new Deliver(0, 1, run('return'), false), new Release(0), new KickoffMany(['e0'], undefined, 0),
    ],
  },
  {
    id: '2', title: 'scheduleMany() with the same kickoffId starts a chain twice', promise: 'd', fixed: true, config: PLAIN_CONFIG,
    commands: () => [
      new KickoffMany(['e0'], 'K1', 0), new Deliver(0, 0, run('return'), false), new Kickoff('e0', 0),
      new Deliver(0, 0, run('return'), false), new KickoffMany(['e0'], 'K1', 0),
    ],
  },
  {
    id: '3', title: 'a result the store refuses (a value it cannot hold) re-runs the handler unalerted', promise: 'b', fixed: true, config: PLAIN_CONFIG,
    commands: () => [new Kickoff('e0', 0), new Deliver(0, 0, run('refuse-value'), false)],
  },
  {
    id: '3', title: 'a result the store refuses (toProperties() throws) re-runs the handler unalerted', promise: 'b', fixed: true, config: PLAIN_CONFIG,
    commands: () => [new Kickoff('e0', 0), new Deliver(0, 0, run('refuse-toProperties'), false)],
  },
  {
    id: '3', title: 'a result the store refuses through ctx.complete(), its error let through, re-runs the handler unalerted', promise: 'b', fixed: true, config: PLAIN_CONFIG,
    commands: () => [new Kickoff('e0', 0), new Deliver(0, 0, run('refuse-complete'), false)],
  },
  {
    id: '4', title: 'the email rate limit marks a held-back alert sent', promise: 'c', fixed: true, config: { ...PLAIN_CONFIG, alerter: 'email' },
    commands: () => [new Kickoff('e0', 0), new Kickoff('e1', 0), new Deliver(0, 0, run('permanent'), false), new Deliver(0, 0, run('permanent'), false)],
  },
  {
    id: '5', title: 'a handler stopped after its effect (AbortError caused by the signal) is handed back silently', promise: 'b', fixed: true, config: PLAIN_CONFIG,
    commands: () => [new Kickoff('e0', 0), new Deliver(0, 0, blocked('return', 'stop-after'), false), new Shutdown(0)],
  },
  {
    id: '6', title: 'cancel() strands an unsent overwrite alert', promise: 'c', fixed: true, config: PLAIN_CONFIG,
    commands: () => [
      new Alerter(false), new Kickoff('e0', 0), new Deliver(0, 0, blocked('return'), false), new Advance(PAST_LEASE),
      new Deliver(0, 1, run('throw'), false), new Operate('cancel', 'e0', 0),
    ],
  },
  {
    id: 'model', title: 'retry() drops a failure alert still owed', promise: 'c', fixed: true, config: PLAIN_CONFIG,
    commands: () => [new Kickoff('e0', 0), new Alerter(false), new Deliver(0, 0, run('permanent'), false), new Operate('retry', 'e0', 0)],
  },
  {
    id: 'model', title: 'a step failing again after retry() while its first failure alert is owed is never alerted', promise: 'c', fixed: true, config: { ...PLAIN_CONFIG, maxRetries: 2 },
    commands: () => [
      new KickoffMany(['e0'], 'K1', 0), new Alerter(false), new Deliver(0, 0, run('permanent'), false), new Operate('retry', 'e0', 0),
      new Deliver(0, 0, run('permanent'), false), new Shutdown(0),
    ],
  },
];

/**
 * The features every known broken promise needs (one of them at least): a run that leaves them all
 * out (`--without`) must hold every promise while the defects are open.
 */
export const KNOWN_TRIGGERS: readonly Feature[] = Object.freeze(['refusal', 'email', 'stop-after', 'cancel', 'kickoff-id', 'alerter-down']);
