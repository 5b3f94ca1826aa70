// The header transitions table of docs/design.md (section 18, "Header transitions") is the
// specification of src/fanout/transitions.ts: this test reads the table and checks every row
// against the function of its name (the states it leaves from and refuses, the state it writes,
// the fields it writes, and its `due`), so the table and the code cannot drift apart.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Key } from '@google-cloud/datastore';
import { TransitionError } from '../../src/errors/errors';
import type { ChildCounts, FanOutState, Header } from '../../src/fanout/records';
import { FAN_OUT_STATES, HEADER_FROM, headerTransitions, may, open, type HeaderEventName } from '../../src/fanout/transitions';

const page = readFileSync(join(__dirname, '..', '..', 'docs', 'design.md'), 'utf8');

interface Row { transition: string; from: string; to: string; writes: string[]; due: string }

function table(): Row[] {
  const heading = page.indexOf('**Header transitions**');
  const start = page.indexOf('| transition | from | to | writes | `due` |', heading);
  assert.ok(heading > 0 && start > heading, 'design.md section 18 has the header transitions table');
  const lines = page.slice(start).split('\n').map((l) => l.trim());
  const end = lines.findIndex((l) => !l.startsWith('|'));
  return lines.slice(2, end).map((l) => {
    const [transition, from, to, writes, due] = l.split('|').slice(1, -1).map((c) => c.trim());
    return {
      transition: transition!.replace(/`/g, ''), from: from!, to: to!.replace(/`/g, ''),
      writes: [...writes!.matchAll(/`([a-zA-Z]+)`/g)].map((m) => m[1]!).filter((f) => f !== 'cancelled'), due: due!,
    };
  });
}

const NOW = new Date('2033-01-01T00:00:00Z');
const STALL = 60_000;
const COUNTS: ChildCounts = { total: 3, pending: 0, succeeded: 2, failed: 1, cancelled: 0, timedOut: 0 };
const PARENT = new Key({ path: ['Order', 'o1'] });

/** A header in `state`, as the step that opened it wrote it an hour before, due a minute before now. */
function header(state: FanOutState): Header {
  return {
    ...open({ id: 'f1', parent: PARENT, chain: 'c1', seq: 1, joinTask: 't2', path: '/join', body: '{}', policy: '{}', now: new Date(NOW.getTime() - 3_600_000), stallAfter: STALL }),
    state, due: new Date(NOW.getTime() - 60_000), cancelJoin: state === 'cancelled' ? true : undefined,
  } as Header;
}

/** Each transition with the event the table's row describes. */
function apply(name: HeaderEventName, h: Header, deadlineMs?: number): Header {
  const t = headerTransitions;
  switch (name) {
    case 'seal': return t.seal(h, { now: NOW, pages: 2, total: 150, stallAfter: STALL, deadlineMs });
    case 'join': return t.join(h, { now: NOW, outcome: 'tolerated', counts: COUNTS });
    case 'joinCancelled': return t.joinCancelled(h, { now: NOW, counts: COUNTS });
    case 'cancel': return t.cancel(h, { now: NOW, join: true, stallAfter: STALL });
    case 'abandon': return t.abandon(h, { now: NOW, reason: 'its parent entity was deleted' });
    case 'reopen': return t.reopen(h);
    case 'postpone': return t.postpone(h, { now: NOW, stallAfter: STALL, pending: 0 });
  }
}

/** The header a row's transition is applied to: for `postpone`, the deadline is the header's own (the seal wrote it). */
function prepared(name: HeaderEventName, state: FanOutState, deadlineMs?: number): Header {
  const h = header(state);
  return name === 'postpone' && deadlineMs !== undefined ? { ...h, deadline: new Date(NOW.getTime() + deadlineMs) } : h;
}

/** The states a row's `from` cell names. */
function fromStates(cell: string): readonly FanOutState[] {
  if (cell === 'any') return FAN_OUT_STATES;
  return [...cell.matchAll(/`([a-z]+)`/g)].map((m) => m[1] as FanOutState);
}

describe('fan-out header transitions, against the table of docs/design.md section 18', () => {
  const rows = table();

  it('the table has a row for open and for every transition, and no other', () => {
    assert.deepEqual(rows.map((r) => r.transition).sort(), ['open', ...Object.keys(HEADER_FROM)].sort());
  });

  it('open: a `writing` header with what the row lists, due `stallAfter` ahead', () => {
    const row = rows.find((r) => r.transition === 'open')!;
    const h = open({ id: 'f1', parent: PARENT, chain: 'c1', seq: 1, joinTask: 't2', path: '/join', body: '{"a":1}', policy: '{}', now: NOW, stallAfter: STALL });
    assert.equal(h.state, row.to);
    for (const field of row.writes) assert.notEqual(h[field as keyof Header], undefined, `open writes ${field}`);
    assert.match(row.due, /^`stallAfter` ahead$/);
    assert.equal(h.due?.getTime(), NOW.getTime() + STALL);
  });

  for (const row of table().filter((r) => r.transition !== 'open')) {
    const name = row.transition as HeaderEventName;
    describe(`${name}`, () => {
      const allowed = fromStates(row.from);

      it(`leaves from ${row.from} only; refused (TransitionError) from every other state`, () => {
        assert.deepEqual([...allowed].sort(), [...(HEADER_FROM[name] === 'any' ? FAN_OUT_STATES : HEADER_FROM[name])].sort());
        for (const state of FAN_OUT_STATES) {
          if (allowed.includes(state)) {
            assert.equal(may(name, header(state)), true, `${name} from ${state}`);
            assert.doesNotThrow(() => apply(name, header(state)));
          } else {
            assert.equal(may(name, header(state)), false, `${name} not from ${state}`);
            assert.throws(() => apply(name, header(state)), TransitionError, `${name} refused from ${state}`);
          }
        }
      });

      it(`writes the state ${row.to} and ${row.writes.length > 0 ? row.writes.join(', ') : 'nothing else'}`, () => {
        for (const state of allowed) {
          const before = prepared(name, state, 30_000);
          const after = apply(name, before, 30_000);
          assert.equal(after.state, row.to === 'kept' ? state : row.to, `${name} from ${state}`);
          for (const field of row.writes) {
            const key = field as keyof Header;
            assert.notDeepEqual(after[key], before[key], `${name} writes ${field}`);
            assert.notEqual(after[key], undefined, `${name} writes ${field}`);
          }
          // Nothing the row does not name changes, but `state` and `due`.
          for (const key of Object.keys({ ...before, ...after }) as Array<keyof Header>) {
            if (key === 'state' || key === 'due' || row.writes.includes(key)) continue;
            assert.deepEqual(after[key], before[key], `${name} leaves ${key} as it was`);
          }
        }
      });

      it(`due: ${row.due}`, () => {
        for (const state of allowed) {
          const before = header(state);
          const after = apply(name, before);
          if (row.due === 'removed') assert.equal(after.due, undefined);
          else if (row.due === 'kept') assert.deepEqual(after.due, before.due);
          else if (row.due === 'now') assert.equal(after.due?.getTime(), NOW.getTime());
          else if (row.due === '`stallAfter` ahead') assert.equal(after.due?.getTime(), NOW.getTime() + STALL);
          else if (row.due.startsWith('`stallAfter` ahead, or the deadline if sooner')) {
            const looking = row.due.includes('while') ? state === 'writing' || state === 'sealed' : true;
            if (looking) {
              assert.equal(after.due?.getTime(), NOW.getTime() + STALL, `${name} from ${state}: stallAfter ahead`);
              assert.equal(apply(name, prepared(name, state, 10_000), 10_000).due?.getTime(), NOW.getTime() + 10_000, `${name} from ${state}: the deadline, sooner`);
            }
            if (row.due.includes('a cancel is unfinished; else removed') && state === 'cancelled') {
              assert.equal(after.due?.getTime(), NOW.getTime() + STALL, 'a cancel whose join is still to commit stays due');
              const done = headerTransitions.postpone({ ...before, cancelJoin: false }, { now: NOW, stallAfter: STALL, pending: 0 });
              assert.equal(done.due, undefined, 'a finished cancel is no longer due');
              const racing = headerTransitions.postpone({ ...before, cancelJoin: false }, { now: NOW, stallAfter: STALL, pending: 2 });
              assert.equal(racing.due?.getTime(), NOW.getTime() + STALL, 'a cancel that still found children pending stays due');
            }
            if (row.due.includes('else removed') && state === 'joining') assert.equal(after.due, undefined, 'a joined fan-out is no longer due');
          } else assert.fail(`a due rule this test does not know: ${row.due}`);
        }
      });
    });
  }

  it('joinCancelled needs the cancel to have asked for the join', () => {
    const h = { ...header('cancelled'), cancelJoin: false };
    assert.equal(may('joinCancelled', h), false);
    assert.throws(() => headerTransitions.joinCancelled(h, { now: NOW, counts: COUNTS }), TransitionError);
  });
});
