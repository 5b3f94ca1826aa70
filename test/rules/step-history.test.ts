// The chain's history as the lock keeps it (src/rules/step-history.ts): pure, no store.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  closed, cutRoute, encodeEntry, ENTRY_MAX_BYTES, HISTORY_MAX_BYTES, HISTORY_STEPS, opened, readHistory, ROUTE_MAX_CHARS, storedHistory,
} from '../../src/rules/step-history';

const T = new Date('2026-03-01T10:00:00Z');
const at = (ms: number): Date => new Date(T.getTime() + ms);

/** `steps` steps run one after another, each opened at `i` s and closed 250 ms later. */
function ran(steps: number, route = '/step'): string {
  let hist = '';
  for (let seq = 1; seq <= steps; seq++) {
    hist = opened(hist, { seq, route, now: at(seq * 1_000), takeover: false });
    hist = closed(hist, { seq, outcome: seq === steps ? 'complete' : 'next', now: at(seq * 1_000 + 250), attempts: 1 });
  }
  return hist;
}

describe('the chain history on the lock', () => {
  it('an entry reads back as written, a line each, newest first', () => {
    const entry = { seq: 7, outcome: 'failed' as const, route: '/charge', startedAt: T, tookMs: 1234, attempts: 4, takeover: true };
    assert.equal(encodeEntry(entry), `7 failed ${T.getTime()} 1234 4 1 /charge`);
    assert.deepEqual(readHistory(encodeEntry(entry)), [entry]);
    assert.deepEqual(readHistory(ran(3)).map((e) => [e.seq, e.outcome, e.tookMs]), [[3, 'complete', 250], [2, 'next', 250], [1, 'next', 250]]);
  });

  it(`keeps the last ${HISTORY_STEPS} steps`, () => {
    const history = readHistory(ran(25));
    assert.deepEqual(history.map((e) => e.seq), [25, 24, 23, 22, 21, 20, 19, 18, 17, 16]);
  });

  it('a retry restarts the open entry: the last attempt\'s start, the takeover kept, attempts counted at the close', () => {
    let hist = opened('', { seq: 4, route: '/a', now: at(0), takeover: true });
    hist = opened(hist, { seq: 4, route: '/a', now: at(5_000), takeover: false });
    assert.equal(readHistory(hist).length, 1);
    hist = closed(hist, { seq: 4, outcome: 'complete', now: at(5_400), attempts: 2 });
    assert.deepEqual(readHistory(hist), [{ seq: 4, outcome: 'complete', route: '/a', startedAt: at(5_000), tookMs: 400, attempts: 2, takeover: true }]);
  });

  it('a step closed without an open entry (cancelled before it ran) has no route and no times', () => {
    const hist = closed(ran(1), { seq: 2, outcome: 'cancelled', now: at(9_000), attempts: 0 });
    assert.deepEqual(readHistory(hist)[0], { seq: 2, outcome: 'cancelled', route: '', attempts: 0, takeover: false });
    assert.equal(readHistory(hist).length, 2);
  });

  it(`routes are cut to ${ROUTE_MAX_CHARS} printable characters; the field never passes ${HISTORY_MAX_BYTES} bytes`, () => {
    assert.equal(cutRoute('/a b\nc\u00e9'), '/a?b?c?');
    assert.equal(cutRoute(`/${'x'.repeat(500)}`).length, ROUTE_MAX_CHARS);
    const hist = ran(30, `/${'é'.repeat(5_000)}`);
    assert.ok(Buffer.byteLength(hist) <= HISTORY_MAX_BYTES);
    assert.equal(readHistory(hist).length, HISTORY_STEPS);
    // The longest entry there can be is within ENTRY_MAX_BYTES.
    const longest = encodeEntry({ seq: Number.MAX_SAFE_INTEGER, outcome: 'cancelled', route: `/${'y'.repeat(999)}`, startedAt: new Date(9_999_999_999_999), tookMs: 9_999_999_999_999, attempts: Number.MAX_SAFE_INTEGER, takeover: true });
    assert.ok(Buffer.byteLength(`${longest}\n`) <= ENTRY_MAX_BYTES, `${Buffer.byteLength(longest)} bytes`);
  });

  it('a typical entry is 36 bytes (a 5-character route, a start and a duration of a few hundred ms): 10 of them, 360 bytes', () => {
    const entry = encodeEntry({ seq: 12, outcome: 'next', route: '/step', startedAt: T, tookMs: 250, attempts: 1, takeover: false });
    assert.equal(Buffer.byteLength(`${entry}\n`), 36);
  });

  it('anything else stored under the name reads as no history, and a bad line is left out', () => {
    for (const value of [undefined, 42, ['1 next 0 0 1 0 /a'], 'x'.repeat(HISTORY_MAX_BYTES + 1)]) assert.equal(storedHistory(value), '');
    assert.deepEqual(readHistory('garbage'), []);
    assert.deepEqual(readHistory(`1 next 5 5 1 0 /a\n2 exploded 5 5 1 0 /b\n-3 next 5 5 1 0 /c`).map((e) => e.seq), [1]);
  });
});

