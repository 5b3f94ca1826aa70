/**
 * The broken promises known on today's main, each as the short sequence of model commands that
 * shows it (the six defects of issue 26, two the model found on its own, and issue 37's fan-out
 * defects 1-8, open on the code the fan-out commands were built on). Each names the
 * promise the oracle finds broken. Set `fixed` once the fix is merged: the sequence must then
 * hold every promise (test/promises/model.test.ts checks both ways).
 */
import { Advance, Alerter, Bulk, Delete, Deliver, DeliverOf, FanOutOp, Forge, Kickoff, KickoffMany, Kill, Operate, Release, RunNow, Shutdown, Tick, type Command, type Feature, type Plan } from './commands';
import type { FanSpec } from './fan-out-plan';
import { TIMINGS } from './instance';
import type { Promise4 } from './oracle';
import type { SequenceConfig } from './world';

/** One known broken promise. */
export interface KnownDefect {
  /** Issue 26's number for it (`37.n` for issue 37's fan-out defects), or `model` for one the model found on its own. */
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
/** Two instances declaring the model's schedules (model/recurring.ts). */
const RECURRING_CONFIG: SequenceConfig = Object.freeze({ ...PLAIN_CONFIG, recurring: true });
const MINUTE_AND_A_SECOND = 61_000;
const run = (finish: Plan['finish']): Plan => ({ finish, block: 'none', onSignal: 'stop-before' });
const blocked = (finish: Plan['finish'], onSignal: Plan['onSignal'] = 'stop-before'): Plan => ({ finish, block: 'before-effect', onSignal });
const PAST_LEASE = TIMINGS.leaseDuration + 1_000;
const fan = (children: string[], more: Partial<FanSpec> = {}): Plan => ({
  finish: 'fanout', block: 'none', onSignal: 'stop-before', fan: { children, wide: false, reverse: false, throwAt: undefined, policy: 'settled', ...more },
});

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
  {
    id: 'bulk', title: 'a bulk retry confirmed twice, its page killed before a retried chain\'s task, acts on a chain twice or loses one', promise: 'a', fixed: true, config: PLAIN_CONFIG,
    commands: () => [
      new Kickoff('e0', 0), new Kickoff('e1', 0), new Deliver(0, 0, run('permanent'), false), new Deliver(0, 0, run('permanent'), false),
      new Advance(1_000), new Bulk('retry', 'model-bulk-1', 0), new Bulk('retry', 'model-bulk-1', 1), new Kill(0, 'next-enqueue'), new Deliver(0, 0, run('return'), false),
    ],
  },
  // Issue 37: fan-out's defects, each as the model found it (docs/concepts/measured.md#the-model-finds-fan-outs-defects), shortened by hand.
  {
    id: '37.1', title: 'a resumed parent starts an ended child again (its entity deleted): the child runs twice, unalerted', promise: 'f', fixed: true, config: PLAIN_CONFIG,
    commands: () => [
      new Kickoff('e0', 0), new DeliverOf('e0', 0, fan(['e1'], { wide: true, throwAt: 100 })), new DeliverOf('e1', 0, run('return')),
      new Delete('e1'), new Operate('retry', 'e0', 0), new DeliverOf('e0', 0, fan(['e1'], { wide: true })),
    ],
  },
  {
    id: '37.2', title: 'a fan-out child kickoff drops a failure alert its entity still owes', promise: 'c', fixed: true, config: PLAIN_CONFIG,
    commands: () => [
      new Kickoff('e1', 0), new Alerter(false), new DeliverOf('e1', 0, run('permanent')), new Kickoff('e0', 0), new DeliverOf('e0', 0, fan(['e1'])),
    ],
  },
  {
    id: '37.3', title: 'the seal leaves an owed overwrite alert on a join step with no record, and cancelFanOut() loses it', promise: 'c', fixed: true, config: PLAIN_CONFIG,
    commands: () => [
      new Alerter(false), new Kickoff('e0', 0), new Deliver(0, 0, blocked('return'), false), new Advance(PAST_LEASE),
      new Deliver(0, 1, fan(['e1']), false), new FanOutOp('cancelFanOut', 'e0', 1),
    ],
  },
  {
    id: '37.4', title: 'a request for the join\'s seq, before the join, runs a handler (the join step has no record to check it against)', promise: 's', fixed: true, config: PLAIN_CONFIG,
    commands: () => [new Kickoff('e0', 0), new Deliver(0, 0, fan(['e1']), false), new Forge(0, 0, 'seq+1 join')],
  },
  {
    id: '37.5', title: 'the route check takes /other?then=/step for /step', promise: 's', fixed: true, config: PLAIN_CONFIG,
    commands: () => [new Kickoff('e0', 0), new Forge(0, 0, 'query')],
  },
  {
    id: '37.5', title: 'the route check takes /admin/step for /step', promise: 's', fixed: true, config: PLAIN_CONFIG,
    commands: () => [new Kickoff('e0', 0), new Forge(0, 0, 'prefix')],
  },
  {
    id: '37.6', title: 'fanIn().children() lists a child twice after a retry that gives the children in another order', promise: 'f', fixed: true, config: PLAIN_CONFIG,
    commands: () => [
      new Kickoff('e0', 0), new DeliverOf('e0', 0, fan(['e1'], { wide: true, throwAt: 100 })), new Operate('retry', 'e0', 0),
      new DeliverOf('e0', 0, fan(['e1'], { wide: true, reverse: true })),
    ],
  },
  {
    id: '37.7', title: 'a child that succeeded is reported failed when its settle was lost and the app started another chain on its entity', promise: 'f', fixed: true, config: PLAIN_CONFIG,
    commands: () => [
      new Kickoff('e0', 0), new DeliverOf('e0', 0, fan(['e1'])), new DeliverOf('e1', 0, blocked('return')), new Kill(0, 'after-next-write'), new Release(0),
      new Kickoff('e1', 1),
    ],
  },
  {
    id: '37.8', title: 'a fanning step whose source throws part-way fails for good on its first attempt', promise: 'f', fixed: true, config: PLAIN_CONFIG,
    commands: () => [new Kickoff('e0', 0), new DeliverOf('e0', 0, fan(['e1', 'e2'], { throwAt: 1 }))],
  },
  // Issue 39: recurring work. Each holds on the code as merged; its mutant (model/mutants/) brings its defect back.
  {
    id: '39.1', title: 'a tick that died after planning its runs leaves them pending, and the next tick starts them', promise: 'r', fixed: true, config: RECURRING_CONFIG,
    commands: () => [new Tick([0]), new Advance(MINUTE_AND_A_SECOND), new Tick([0], 1), new Tick([1])],
  },
  {
    id: '39.2', title: 'a tick that died after its kickoff, its run ended since, is resumed by the next tick without a second chain', promise: 'r', fixed: true, config: RECURRING_CONFIG,
    commands: () => [new Tick([0]), new Advance(MINUTE_AND_A_SECOND), new Tick([0], 4), new DeliverOf('r-min', 1, run('return')), new Tick([1])],
  },
  {
    id: '39.3', title: 'run-now under one id, confirmed again after its run ended, counts its run twice in the view\'s started', promise: 'r', fixed: true, config: RECURRING_CONFIG,
    commands: () => [new Tick([0]), new RunNow('r-min', 'now-1', 0), new DeliverOf('r-min', 1, run('return')), new Advance(1_000), new RunNow('r-min', 'now-1', 1)],
  },
];

/**
 * The features every known broken promise needs (one of them at least): a run that leaves them all
 * out (`--without`) must hold every promise while the defects are open.
 */
export const KNOWN_TRIGGERS: readonly Feature[] = Object.freeze(['refusal', 'email', 'stop-after', 'cancel', 'kickoff-id', 'alerter-down', 'fanout', 'forge']);
