/** Checks that each measured request took the path it is meant to measure. */
import type { Reply } from './server';

/** What a reply must look like. */
export interface Expectation {
  status: number;
  body: RegExp;
}

export const STEP_DONE: Expectation = { status: 200, body: /^step \d+ done; chain complete$/ };
export const DUPLICATE_FINISHED: Expectation = { status: 200, body: /duplicate of a finished step/ };
export const DUPLICATE_HELD: Expectation = { status: 503, body: /running in another attempt/ };

/** Throws when `reply` is not what `what` should answer: a benchmark of the wrong path is worthless. */
export function expectReply(reply: Reply, expected: Expectation, what: string): void {
  if (reply.status !== expected.status || !expected.body.test(reply.body)) {
    throw new Error(`${what} was answered ${reply.status} ${JSON.stringify(reply.body)}; expected ${expected.status} matching ${expected.body}`);
  }
}
