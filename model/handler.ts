/**
 * The model's one step handler and its entity. What a run does is scripted by the model per
 * delivery (the `x-model-script` header): how it ends (return, `ctx.schedule()`, `ctx.complete()`,
 * throw, `PermanentError`, a result the store refuses, also through a `ctx.complete()` the handler
 * lets its refusal through), whether it blocks before or after its effect
 * until the model releases it, and what it does when `ctx.signal` aborts while it waits. The
 * effect (a charge, say) is recorded outside the store, by the model.
 */
import { PermanentError } from '../src/errors/errors';
import type { TaskContext, TaskHandler } from '../src/step/handler-types';
import type { Properties } from '../src/types';
import { abortedAfterEffect, handBackSilently, idempotencyKeyOf } from './conventions';

/** How a run ends. */
export const FINISHES = ['return', 'schedule', 'complete', 'throw', 'permanent', 'refuse-value', 'refuse-toProperties', 'refuse-complete'] as const;
export type Finish = (typeof FINISHES)[number];

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
}

/** Finishes whose run does its effect (a run that throws fails before its effect). */
const EFFECTFUL: ReadonlySet<Finish> = new Set(['return', 'schedule', 'complete', 'refuse-value', 'refuse-toProperties', 'refuse-complete']);

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
  ran(ctx: TaskContext<ModelEntity>, idempotencyKey: string | undefined): void;
  /** A run did its effect. */
  effect(ctx: TaskContext<ModelEntity>): void;
  /** A run scheduled step `seq`. */
  scheduled(ctx: TaskContext<ModelEntity>, seq: number): void;
  /** Waits until the model releases run `id` ('released') or the signal aborts ('aborted'); never settles once the instance died. */
  wait(id: string, signal: AbortSignal | undefined): Promise<'released' | 'aborted'>;
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
    const script = scriptOf(ctx);
    port.ran(ctx, idempotencyKeyOf(ctx));
    const effectful = EFFECTFUL.has(script.finish);
    let effected = false;
    const effect = (): void => {
      if (effectful && !effected) {
        effected = true;
        port.effect(ctx);
      }
    };
    if (script.block !== 'none') {
      if (script.block === 'after-effect') effect();
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
