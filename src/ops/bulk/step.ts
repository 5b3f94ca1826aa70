/**
 * The steps of a bulk operation: each runs one page (`page.ts`) and stores what it did with its
 * own finishing write, then schedules the next page, or completes the operation's chain after the
 * last one. They are steps of this Locker like any other (`locker.handle()` serves them, on the
 * route the status router mounts at `/operations/step`): delivered at least once, run at most once
 * under the record's lease, re-delivered by the sweep if a task is lost, and taken over (with an
 * overwrite alert) if a process dies in the middle of a page.
 */
import { PermanentError } from '../../errors/errors';
import type { Logger } from '../../types';
import type { TaskHandler } from '../../step/handler-types';
import { describeBulk } from './filter';
import type { Operation, OperationEntity } from './operation';
import { runPage, type PageParts } from './page';
import { pageDone } from './transitions';

/** What the operation's steps use. */
export interface StepParts extends PageParts {
  readonly config: PageParts['config'] & { readonly logger: Logger };
}

/** The handler of an operation's steps. */
export function operationStep(parts: StepParts): TaskHandler<OperationEntity> {
  return async (ctx) => {
    const op = ctx.entity.op;
    if (!op) throw new PermanentError(`${ctx.key.name ?? ''} is not a bulk operation's record`);
    if (op.state === 'done') return; // the last page finished it; nothing follows
    const next = pageDone(op, await runPage(parts, op), new Date(parts.config.clock()));
    ctx.entity.op = next;
    if (next.state === 'running') {
      await ctx.schedule(op.path);
      return;
    }
    await ctx.complete();
    parts.config.logger.info('bulk operation done', auditFields(next));
  };
}

/** The audit line's fields: who, when, what, how many. */
export function auditFields(op: Operation): Record<string, unknown> {
  return {
    operation: op.id, by: op.by ?? NOBODY, at: op.createdAt.toISOString(), action: op.action, filter: op.filter, what: describeBulk(op.action, op.filter),
    matched: op.matchedExact ? op.matched : `${op.matched}+`, done: op.done, skipped: op.skipped, failed: op.failed,
    ...(op.finishedAt ? { finishedAt: op.finishedAt.toISOString() } : {}),
  };
}

/** What the audit line says for "who" when the authenticator named nobody and `locker.bulk()` was told no one. */
export const NOBODY = '(not named: the authenticator gave no principal)';
