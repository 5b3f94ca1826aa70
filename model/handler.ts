/**
 * The model's one step handler and its entity. What a run does is scripted by the model per
 * delivery (the `x-model-script` header): how it ends (return, `ctx.schedule()`, `ctx.complete()`,
 * throw, `PermanentError`, a result the store refuses, also through a `ctx.complete()` the handler
 * lets its refusal through), whether it blocks before or after its effect
 * until the model releases it, and what it does when `ctx.signal` aborts while it waits. The
 * effect (a charge, say) is recorded outside the store, by the model.
 */
import type { Key } from '@google-cloud/datastore';
import { PermanentError } from '../src/errors/errors';
import type { FanIn, FanOutStarted } from '../src/fanout/types';
import type { TaskContext, TaskHandler } from '../src/step/handler-types';
import type { Properties } from '../src/types';
import { abortedAfterEffect, handBackSilently, idempotencyKeyOf } from './conventions';
import { policyOf, source, type FanSpec } from './fan-out-plan';

/**
 * How a run ends: also `result` (a fan-out child sets its result with `ctx.setResult()`, then
 * returns; elsewhere it returns) and `fanout` (`ctx.fanOut()` over the script's children, to the
 * join route).
 */
export const FINISHES = ['return', 'schedule', 'complete', 'throw', 'permanent', 'refuse-value', 'refuse-toProperties', 'refuse-complete', 'result', 'fanout'] as const;
export type Finish = (typeof FINISHES)[number];

function isFinish(finish: string | undefined): finish is Finish {
  return (FINISHES as readonly (string | undefined)[]).includes(finish);
}

/** Where a run waits for the model, if it does. */
export const BLOCKS = ['none', 'before-effect', 'after-effect'] as const;
export type Block = (typeof BLOCKS)[number];

/**
 * What a waiting run does when `ctx.signal` aborts (a shutdown): hands back silently before its
 * effect, does its effect and then rejects with an `AbortError` caused by the signal (a fetch
 * whose reply the abort cut), or runs on.
 */
export const ON_SIGNAL = ['stop-before', 'stop-after', 'ignore'] as const;
export type OnSignal = (typeof ON_SIGNAL)[number];

/** One delivery's script. */
export interface Script {
  /** The delivery's id, to release it. */
  id: string;
  finish: Finish;
  block: Block;
  onSignal: OnSignal;
  /** With `fanout`: the fan-out. */
  fan?: FanSpec;
  /**
   * The run ends as the step's last run ended, where it ran before (a handler that fails, or
   * succeeds, the same way each time: a poison message); `finish` where it never ran, or where the
   * last run fanned out.
   */
  again?: boolean;
  /** A forged or replayed request (how it was forged), for reports: the oracle judges the request itself. */
  forged?: string;
}

/** Finishes whose run does its effect (a run that throws fails before its effect). */
const EFFECTFUL: ReadonlySet<Finish> = new Set(['return', 'schedule', 'complete', 'refuse-value', 'refuse-toProperties', 'refuse-complete', 'result', 'fanout']);

/** Finishes a run of a step that fanned out before replaces by fanning out again. */
const RESUMING: ReadonlySet<Finish> = new Set(['return', 'schedule', 'complete', 'result']);

/** The routes of every instance: a step, a fan-out child's first step, a join, and routes no task is ever made for (forged requests aim there). */
export const ROUTES = Object.freeze({ step: '/step', child: '/child', join: '/join', other: '/other', admin: '/admin/step', recurring: '/recurring' });

/** A fan-out child's chain id (`f<fan-out id>_<key hash>`). */
export function isChildChain(chain: string | undefined): boolean {
  return chain !== undefined && /^f[0-9a-f]{24}_/.test(chain);
}

/** The longest chain the model grows: a run at this step returns instead of scheduling. */
export const LAST_STEP = 6;

/** The script of a delivery that has none: the run does its effect and returns. */
export const PLAIN: Omit<Script, 'id'> = Object.freeze({ finish: 'return', block: 'none', onSignal: 'stop-before' });

/** The model's entity: a counter, and a way to make the store refuse it. */
export class ModelEntity {
  n: number;
  /** Set by a run whose result the store refuses: a value it cannot hold, or a `toProperties()` that throws. */
  refuse: 'value' | 'throw' | undefined;

  constructor(props: Properties) {
    this.n = typeof props.n === 'number' ? props.n : 0;
    this.refuse = undefined;
  }

  /** The properties to store (what the Locker saves when the step finishes). */
  toProperties(): Properties {
    if (this.refuse === 'throw') throw new Error('model: toProperties() cannot serialise this entity');
    return this.refuse === 'value' ? { n: this.n, bad: new Map([['a', 1]]) } : { n: this.n };
  }
}

/** What the handler tells the model, and how it waits for it. */
export interface HandlerPort {
  /** A run started (with the idempotency key it was given, if any). */
  ran(ctx: TaskContext<ModelEntity>, idempotencyKey: string | undefined, finish: Finish): void;
  /** How the last run of the step `ctx` runs (same entity, seq and chain) ended, if one ran. */
  lastFinish(ctx: TaskContext<ModelEntity>): string | undefined;
  /** A run did its effect. */
  effect(ctx: TaskContext<ModelEntity>): void;
  /** A run scheduled step `seq`. */
  scheduled(ctx: TaskContext<ModelEntity>, seq: number): void;
  /** Waits until the model releases run `id` ('released') or the signal aborts ('aborted'); never settles once the instance died. */
  wait(id: string, signal: AbortSignal | undefined): Promise<'released' | 'aborted'>;
  /** The children of the fanning step `ctx` runs: those its first attempt gave (`spec`'s when this is the first). */
  fanChildren(ctx: TaskContext<ModelEntity>, spec: FanSpec): string[];
  /** Where the step `ctx` runs fanned out before: how this run fans out again (in the other order than the attempt before); else undefined. */
  resumeFan(ctx: TaskContext<ModelEntity>): FanSpec | undefined;
  /** The key of entity `name`. */
  keyOf(name: string): Key;
  /** A fanning attempt's `fanOut()` resolved (the fan-out is sealed), over `children`. */
  fannedOut(ctx: TaskContext<ModelEntity>, started: FanOutStarted, children: string[], spec: FanSpec): void;
  /** A run on the join route read `ctx.fanIn()`: what it was shown, every page, undefined when it was no join. */
  joined(ctx: TaskContext<ModelEntity>, shown: JoinShown | undefined): void;
}

/** What a join was shown: `fanIn()`'s id, outcome and counts, every page of children, and the children per state as `children({ state })` lists them. */
export interface JoinShown {
  id: string;
  outcome: string;
  counts: Record<string, number>;
  listing: Array<{ entity: string; state: string; result?: unknown }>;
  byState: Record<string, string[]>;
}

/** Reads a join's `fanIn()` page by page (cursors), and once more per state. */
async function readFanIn(fanIn: FanIn): Promise<JoinShown> {
  const listing: JoinShown['listing'] = [];
  const pages = async (state?: string): Promise<Array<{ entity: string; state: string; result?: unknown }>> => {
    const out: JoinShown['listing'] = [];
    let cursor: string | undefined;
    for (let n = 0; n < 1_000; n++) {
      const options: { cursor?: string; state?: 'pending' | 'succeeded' | 'failed' | 'cancelled' | 'timedOut' } = {};
      if (cursor !== undefined) options.cursor = cursor;
      if (state !== undefined) options.state = state as NonNullable<typeof options.state>;
      const page = await fanIn.children(options);
      for (const c of page.children) out.push({ entity: c.key.name ?? String(c.key.id), state: c.state, ...(c.result !== undefined ? { result: c.result } : {}) });
      cursor = page.cursor;
      if (cursor === undefined) break;
    }
    return out;
  };
  listing.push(...await pages());
  const byState: Record<string, string[]> = {};
  for (const state of ['pending', 'succeeded', 'failed', 'cancelled', 'timedOut']) byState[state] = (await pages(state)).map((c) => c.entity);
  return { id: fanIn.id, outcome: fanIn.outcome, counts: { ...fanIn.counts }, listing, byState };
}

/** Reads a delivery's script from its request. */
export function scriptOf(ctx: TaskContext<ModelEntity>): Script {
  const header = ctx.request.headers['x-model-script'];
  if (typeof header !== 'string') return { id: '', ...PLAIN };
  return JSON.parse(header) as Script;
}

/** The step handler of one instance. */
export function stepHandler(port: HandlerPort): TaskHandler<ModelEntity> {
  return async (ctx) => {
    const drawn = scriptOf(ctx);
    const last = drawn.again ? port.lastFinish(ctx) : undefined;
    const scripted: Script = isFinish(last) && last !== 'fanout' ? { ...drawn, finish: last } : drawn;
    port.ran(ctx, idempotencyKeyOf(ctx), scripted.finish);
    // A step that fanned out fans out again when it runs again (the app's code is the same), unless the run throws.
    const resume = RESUMING.has(scripted.finish) ? port.resumeFan(ctx) : undefined;
    // A schedule's run does what any step does, but does not fan out (its children would be the model's entities, whose fan-out rules name their parents).
    const plain = ctx.request.path === ROUTES.recurring && scripted.finish === 'fanout' ? { ...scripted, finish: 'return' as const } : scripted;
    const script: Script = resume ? { ...plain, finish: 'fanout', fan: plain.fan ?? resume } : plain;
    if (ctx.request.path === ROUTES.join) {
      const fanIn = await ctx.fanIn();
      port.joined(ctx, fanIn ? await readFanIn(fanIn) : undefined);
    }
    const effectful = EFFECTFUL.has(script.finish);
    let effected = false;
    const effect = (): void => {
      if (effectful && !effected) {
        effected = true;
        port.effect(ctx);
      }
    };
    if (script.block !== 'none') {
      if (script.block === 'after-effect' && script.finish !== 'fanout') effect(); // a fanning run's effect comes after its seal
      const how = await port.wait(script.id, ctx.signal);
      if (how === 'aborted') {
        if (script.onSignal === 'stop-before' && !effected) return handBackSilently(ctx);
        if (script.onSignal !== 'ignore') {
          effect();
          throw abortedAfterEffect(ctx);
        }
        await port.wait(script.id, undefined); // runs on: until the model releases it, or never
      }
    }
    switch (script.finish) {
      case 'throw':
        throw new Error('model: the handler failed');
      case 'permanent':
        throw new PermanentError('model: the handler failed for good');
      case 'return':
        effect();
        ctx.entity.n++;
        return;
      case 'result': {
        const chain = ctx.request.headers['x-lock-chain'];
        if (isChildChain(typeof chain === 'string' ? chain : undefined)) await ctx.setResult({ n: ctx.entity.n, seq: ctx.seq });
        effect();
        ctx.entity.n++;
        return;
      }
      case 'fanout': {
        const spec = script.fan!;
        const names = port.fanChildren(ctx, spec);
        const children = source(names, spec, (name) => ({
          key: port.keyOf(name), path: ROUTES.child, payload: { of: ctx.key.name ?? '', at: ctx.seq }, entity: { n: 0 },
        }));
        const started = await ctx.fanOut(children, { join: ROUTES.join, payload: { join: ctx.seq }, policy: policyOf(spec.policy) });
        port.fannedOut(ctx, started, names, spec);
        effect(); // after the seal: a source that threw did nothing yet, and its retry is no second effect
        return;
      }
      case 'schedule': {
        effect();
        ctx.entity.n++;
        if (ctx.seq >= LAST_STEP) return;
        const next = await ctx.schedule('/step', { after: ctx.seq });
        port.scheduled(ctx, next.seq);
        return;
      }
      case 'complete':
        effect();
        ctx.entity.n++;
        await ctx.complete();
        return;
      case 'refuse-value':
      case 'refuse-toProperties':
        effect();
        ctx.entity.refuse = script.finish === 'refuse-value' ? 'value' : 'throw';
        return;
      case 'refuse-complete':
        effect();
        ctx.entity.refuse = 'value';
        await ctx.complete(); // the store refuses it: the handler lets the error through
        return;
    }
  };
}
