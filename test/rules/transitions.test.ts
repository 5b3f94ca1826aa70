// The lock transitions table of docs/concepts/life-of-a-step.md is the specification of
// src/transitions.ts: this test reads the table and checks every cell against the function of
// its row, so the table and the code cannot drift apart.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ChainBusyError, TransitionError } from '../../src/errors/errors';
import type { Lock } from '../../src/rules/lock-fields';
import { readLock, writeLock } from '../../src/rules/lock-fields';
import { cancel, kickoff, resend, retry, transitions, type LockEventName } from '../../src/rules/transitions';
import { StepState } from '../../src/types';

const page = readFileSync(join(__dirname, '..', '..', 'docs', 'concepts', 'life-of-a-step.md'), 'utf8');
const HEADING = '## Lock transitions';

/** The column of each lock field in the table, and the `Lock` property it is. */
const FIELDS = {
  lock_ts: 'ts', lock_req: 'req', lock_seq: 'seq', lock_try: 'tries', lock_state: 'state',
  lock_chain: 'chain', lock_task: 'task', lock_err: 'err', lock_alerts: 'alerts',
} as const satisfies Record<string, keyof Lock>;
type Column = keyof typeof FIELDS;

interface Row { event: string; cells: Partial<Record<Column, string>> }

function lifeCycleTable(): { columns: string[]; rows: Row[] } {
  const start = page.indexOf('| transition | when |', page.indexOf(HEADING));
  assert.ok(page.includes(HEADING) && start > 0, 'the life-of-a-step page has the transitions table');
  const lines = page.slice(start).split('\n');
  const end = lines.findIndex((l) => !l.startsWith('|'));
  const table = lines.slice(0, end).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
  const columns = table[0]!.map((c) => c.replace(/`/g, ''));
  const rows = table.slice(2).map((cells) => {
    const row: Row = { event: cells[0]!.replace(/`/g, ''), cells: {} };
    columns.forEach((c, i) => { if (c in FIELDS) row.cells[c as Column] = cells[i]!.replace(/`/g, ''); });
    return row;
  });
  return { columns, rows };
}

const OLD = new Date('2026-01-01T00:00:00Z');
const NOW = new Date('2026-01-01T00:05:00Z');
const CLAIMED = ['overwrite:3', 'failure:3'];

/** A lock each event may act on: failed for a retry, complete for a kickoff, a held step otherwise. */
function before(event: string): Lock {
  const base: Lock = {
    ts: OLD, req: 'holder', seq: 3, tries: 2, state: StepState.scheduled, chain: 'c1', run: undefined, task: 't1',
    err: 'an earlier error', alerts: ['overwrite:3'], legacy: false,
  };
  if (event === 'retry') return { ...base, req: '', state: StepState.failed };
  if (event === 'kickoff') return { ...base, req: '', state: StepState.complete, task: undefined };
  return base;
}

const EVENT = { now: NOW, attempt: 'A', chain: 'c2', task: 't2', error: 'boom', alerts: CLAIMED, leaseDuration: 60_000 };

function apply(event: LockEventName, lock: Lock, e: object): Lock {
  return (transitions[event] as (l: Lock, e: object) => Lock)(lock, e);
}

/** Checks one cell: what the table says the field becomes, against what the transition wrote. */
function check(cell: string, field: keyof Lock, was: Lock, now: Lock, event: string, withoutClaim: Lock): void {
  const at = `${event}: ${field} is "${cell}"`;
  const value = now[field];
  switch (cell) {
    case 'kept': return assert.deepEqual(value, was[field], at);
    case 'now': return assert.deepEqual(value, NOW, at);
    case 'now − lease': return assert.deepEqual(value, new Date(NOW.getTime() - EVENT.leaseDuration), at);
    case 'attempt': return assert.equal(value, EVENT.attempt, at);
    case 'empty': return assert.equal(value, '', at);
    case '+1': return assert.equal(value, (was[field] as number) + 1, at);
    case '0': return assert.equal(value, 0, at);
    case 'new': return assert.equal(value, EVENT[field as 'chain' | 'task'], at);
    case 'error': return assert.equal(value, EVENT.error, at);
    case '—': return assert.deepEqual(value, field === 'alerts' ? [] : undefined, at);
    case '+alert':
      assert.deepEqual(value, CLAIMED, `${at} (an alert claimed)`);
      return assert.deepEqual(withoutClaim[field], was[field], `${at} (no alert claimed)`);
    default:
      assert.ok((Object.values(StepState) as string[]).includes(cell), `${at}: a cell the test does not know`);
      return assert.equal(value, cell, at);
  }
}

describe('the lock transitions table is the transitions, row by row', () => {
  const { columns, rows } = lifeCycleTable();

  it('has a column for every lock field and a row for every transition, once each', () => {
    assert.deepEqual(columns.filter((c) => c.startsWith('lock_')), Object.keys(FIELDS));
    assert.deepEqual(rows.map((r) => r.event).sort(), Object.keys(transitions).sort());
  });

  for (const row of rows) {
    it(`${row.event}: writes what the table says`, () => {
      const name = row.event as LockEventName;
      const was = before(name);
      const now = apply(name, was, EVENT);
      const withoutClaim = apply(name, was, { ...EVENT, alerts: undefined });
      for (const [column, cell] of Object.entries(row.cells)) {
        check(cell!, FIELDS[column as Column], was, now, name, withoutClaim);
      }
      assert.deepEqual(was, before(name), 'the transition does not change the lock it was given');
    });
  }
});

describe('transitions: what they refuse', () => {
  const scheduled = before('take');
  it('a kickoff refuses a chain with a step scheduled or running, and accepts every idle state', () => {
    assert.throws(() => kickoff({ ...scheduled, req: '' }, EVENT), ChainBusyError);
    assert.throws(() => kickoff(scheduled, EVENT), ChainBusyError);
    for (const state of [undefined, StepState.complete, StepState.failed, StepState.cancelled]) {
      assert.equal(kickoff({ ...scheduled, req: '', state }, EVENT).state, StepState.scheduled);
    }
  });
  it('a kickoff accepts a lock the Go library left free (Go marks completion only by lock_seq + 1), not one Go holds', () => {
    const goComplete = readLock({ lock_ts: OLD, lock_req: '', lock_seq: 4, lock_try: 0 });
    assert.equal(goComplete.legacy, true);
    const started = kickoff(goComplete, EVENT);
    assert.deepEqual([started.seq, started.state, started.chain, started.legacy], [5, StepState.scheduled, 'c2', false]);
    assert.throws(() => kickoff(readLock({ lock_ts: OLD, lock_req: 'go-request', lock_seq: 4, lock_try: 0 }), EVENT), ChainBusyError);
  });
  it('retry only a failed step; cancel and resend only a scheduled one', () => {
    assert.throws(() => retry(scheduled, EVENT), TransitionError);
    for (const state of [StepState.complete, StepState.failed, StepState.cancelled, undefined]) {
      assert.throws(() => cancel({ ...scheduled, state }, EVENT), TransitionError);
      assert.throws(() => resend({ ...scheduled, state }, EVENT), TransitionError);
    }
  });
  it('a written lock reads back as the transition made it', () => {
    const next = apply('schedule', scheduled, EVENT);
    const { legacy: _ignored, ...stored } = readLock(writeLock({ count: 1 }, next));
    const { legacy: _alsoIgnored, ...made } = next;
    assert.deepEqual(stored, made);
  });
});
