// How an attempt ends (`decideEnd`, src/step/end-decision.ts), row by row, without a store: each
// row is what the attempt knew when its handler was done, and the end it must come to.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decideAfterFinish, decideEnd, type AttemptEnd, type AttemptFacts } from '../../src/step/end-decision';
import { ContentionError, LeaseLostError, PermanentError, RequestTimeoutError, ShutdownError, StoreConfigError, StoreRejectedError, StoreUnavailableError } from '../../src/errors/errors';

const shutdown = new ShutdownError('the instance is shutting down');
const timeLimit = new RequestTimeoutError('the request nears its timeout');
const lost = new LeaseLostError('another attempt took the lease');
const thrown = new Error('card declined');
const permanent = new PermanentError('no such card');
const unavailable = new StoreUnavailableError('UNAVAILABLE');
const contention = new ContentionError('too much contention');
const rejected = new StoreRejectedError('entity too big');
const config = new StoreConfigError('no index');
const source = new Error('the source\'s API timed out');
const twice = new TypeError('fanOut(): child 2 names Line:"a" again');

const none: AttemptFacts = { ranOn: false, interruption: undefined, finished: false, next: undefined, failure: undefined, lost: undefined };

/** [what the row is, the facts, the end]. */
const ROWS: Array<[string, Partial<AttemptFacts>, AttemptEnd]> = [
  ['returned without finishing', {}, { end: 'finish' }],
  ['finished by its own schedule()', { finished: true, next: 4 }, { end: 'finished', next: 4 }],
  ['finished, then threw', { finished: true, next: 4, failure: { error: thrown } }, { end: 'finished', next: 4, threw: thrown }],
  ['finished, then still running after a stop', { finished: true, next: 4, ranOn: true, interruption: shutdown }, { end: 'finished', next: 4 }],
  ['threw', { failure: { error: thrown } }, { end: 'fail', error: thrown, nearTimeout: false }],
  ['threw a PermanentError', { failure: { error: permanent } }, { end: 'fail', error: permanent, nearTimeout: false }],
  ['let a store fault of its own through', { failure: { error: unavailable } }, { end: 'fail', error: unavailable, nearTimeout: false }],
  ['the lease was lost while it ran', { lost }, { end: 'lost', error: lost }],
  ['threw the LeaseLostError a write met', { failure: { error: lost } }, { end: 'lost', error: lost }],
  ['lost, then returned', { lost, failure: undefined }, { end: 'lost', error: lost }],
  ['still running at the end of the grace after shutdown', { ranOn: true, interruption: shutdown }, { end: 'handBack', ranOn: true, why: shutdown }],
  ['still running at the end of the grace after the time limit', { ranOn: true, interruption: timeLimit, lost }, { end: 'handBack', ranOn: true, why: timeLimit }],
  ['stopped at shutdown, rejected with the signal\'s reason', { interruption: shutdown, failure: { error: shutdown } }, { end: 'handBack', ranOn: false, why: shutdown }],
  ['stopped near the time limit, rejected with the signal\'s reason', { interruption: timeLimit, failure: { error: timeLimit } }, { end: 'fail', error: timeLimit, nearTimeout: true }],
  ['stopped, rejected with another error', { interruption: shutdown, failure: { error: thrown } }, { end: 'handBack', ranOn: true, why: shutdown, rejected: thrown }],
  ['stopped, returned', { interruption: shutdown }, { end: 'finish' }],
  ['its finishing write gave up on a store fault', { failure: { error: unavailable }, settleError: unavailable }, { end: 'unsure', error: unavailable }],
  ['its finishing write gave up on contention', { failure: { error: contention }, settleError: contention }, { end: 'unsure', error: contention }],
  ['its finishing write was refused for good', { failure: { error: rejected }, settleError: rejected }, { end: 'unstorable', error: rejected }],
  ['its entity\'s toProperties() threw in a finishing write', { failure: { error: thrown }, settleError: thrown }, { end: 'unstorable', error: thrown }],
  ['the store\'s set-up is wrong', { failure: { error: config } }, { end: 'unsure', error: config }],
  ['fanOut()\'s source threw', { failure: { error: source }, fanOutError: source }, { end: 'fail', error: source, nearTimeout: false }],
  ['fanOut() was given a child twice', { failure: { error: twice }, fanOutError: twice }, { end: 'fail', error: twice, nearTimeout: false }],
  ['fanOut()\'s source threw a PermanentError', { failure: { error: permanent }, fanOutError: permanent }, { end: 'fail', error: permanent, nearTimeout: false }],
  ['the store failed while fanOut() added children', { failure: { error: unavailable }, fanOutError: unavailable }, { end: 'handBack', ranOn: true, why: 'store-unavailable' }],
  ['contention while fanOut() added children', { failure: { error: contention }, fanOutError: contention }, { end: 'handBack', ranOn: true, why: 'store-unavailable' }],
  ['the store refused a fan-out write for good', { failure: { error: rejected }, fanOutError: rejected }, { end: 'fail', error: rejected, nearTimeout: false }],
  ['fanOut() failed, and the handler threw something else', { failure: { error: thrown }, fanOutError: unavailable }, { end: 'fail', error: thrown, nearTimeout: false }],
  ['fanOut()\'s seal gave up on a store fault', { failure: { error: unavailable }, settleError: unavailable }, { end: 'unsure', error: unavailable }],
];

describe('decideEnd(): how an attempt ends', () => {
  for (const [what, facts, end] of ROWS) {
    it(`${what}: ${end.end}`, () => {
      assert.deepEqual(decideEnd({ ...none, ...facts }), end);
    });
  }

  it('every end is some row\'s', () => {
    const ends = new Set(ROWS.map(([, , e]) => e.end));
    assert.deepEqual([...ends].sort(), ['fail', 'finish', 'finished', 'handBack', 'lost', 'unstorable', 'unsure']);
  });
});

describe('decideAfterFinish(): the finishing write after the handler returned threw', () => {
  const rows: Array<[string, unknown, AttemptEnd['end']]> = [
    ['the lease was lost', lost, 'lost'],
    ['the store stayed unavailable', unavailable, 'unsure'],
    ['contention outlasted the retries', contention, 'unsure'],
    ['the store\'s set-up is wrong', config, 'unsure'],
    ['the store refused the entity for good', rejected, 'unstorable'],
    ['toProperties() threw', thrown, 'unstorable'],
  ];
  for (const [what, error, end] of rows) {
    it(`${what}: ${end}`, () => {
      assert.deepEqual(decideAfterFinish(error), { end, error });
    });
  }
});
