// A schedule's times in its zone, across the DST days of 2026 in Europe/Berlin (29 March, 25
// October) and America/New_York (8 March, 1 November): what docs/guides/recurring.md promises.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cronTimes, checkZone } from '../../src/recurring/cron-times';

/** The times of `expr` in `zone` in (`from`, `to`], as local wall times with their UTC instants. */
function times(expr: string, zone: string, from: string, to: string): string[] {
  const t = cronTimes(expr, zone);
  return t.timesBetween(new Date(from), new Date(to)).map((d) => `${d.toLocaleString('sv-SE', { timeZone: zone })} = ${d.toISOString()}`);
}

describe('cronTimes(): DST in the schedule\'s zone', () => {
  it('Europe/Berlin, spring forward: 02:30 does not exist on 29 March; it runs once, at 03:00 CEST', () => {
    assert.deepEqual(times('30 2 * * *', 'Europe/Berlin', '2026-03-27T12:00:00Z', '2026-03-30T12:00:00Z'), [
      '2026-03-28 02:30:00 = 2026-03-28T01:30:00.000Z',
      '2026-03-29 03:00:00 = 2026-03-29T01:00:00.000Z',
      '2026-03-30 02:30:00 = 2026-03-30T00:30:00.000Z',
    ]);
  });

  it('Europe/Berlin, fall back: 02:30 happens twice on 25 October; a fixed time runs once, at its first pass', () => {
    assert.deepEqual(times('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', '2026-10-26T12:00:00Z'), [
      '2026-10-25 02:30:00 = 2026-10-25T00:30:00.000Z',
      '2026-10-26 02:30:00 = 2026-10-26T01:30:00.000Z',
    ]);
  });

  it('Europe/Berlin, fall back: an expression with a step in the hour field runs in both passes of the hour', () => {
    assert.deepEqual(times('*/30 * * * *', 'Europe/Berlin', '2026-10-24T23:45:00Z', '2026-10-25T02:15:00Z'), [
      '2026-10-25 02:00:00 = 2026-10-25T00:00:00.000Z',
      '2026-10-25 02:30:00 = 2026-10-25T00:30:00.000Z',
      '2026-10-25 02:00:00 = 2026-10-25T01:00:00.000Z',
      '2026-10-25 02:30:00 = 2026-10-25T01:30:00.000Z',
      '2026-10-25 03:00:00 = 2026-10-25T02:00:00.000Z',
    ]);
  });

  it('America/New_York, spring forward (8 March) and fall back (1 November)', () => {
    assert.deepEqual(times('30 2 * * *', 'America/New_York', '2026-03-07T12:00:00Z', '2026-03-09T12:00:00Z'), [
      '2026-03-08 03:00:00 = 2026-03-08T07:00:00.000Z',
      '2026-03-09 02:30:00 = 2026-03-09T06:30:00.000Z',
    ]);
    assert.deepEqual(times('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', '2026-11-02T12:00:00Z'), [
      '2026-11-01 01:30:00 = 2026-11-01T05:30:00.000Z',
      '2026-11-02 01:30:00 = 2026-11-02T06:30:00.000Z',
    ]);
  });

  it('latestUpTo() finds the latest time at or before now, past an outage of any length', () => {
    const t = cronTimes('0 3 * * *', 'UTC');
    assert.equal(t.latestUpTo(new Date('2026-06-10T02:00:00Z'), new Date('2026-01-01T00:00:00Z'))?.toISOString(), '2026-06-09T03:00:00.000Z');
    assert.equal(t.latestUpTo(new Date('2026-06-10T03:00:00Z'), new Date('2026-01-01T00:00:00Z'))?.toISOString(), '2026-06-10T03:00:00.000Z', 'now itself counts');
    assert.equal(t.latestUpTo(new Date('2026-06-10T02:00:00Z'), new Date('2026-06-09T03:00:00Z')), undefined, 'nothing after the floor');
    const minutely = cronTimes('* * * * *', 'UTC');
    assert.equal(minutely.latestUpTo(new Date('2026-06-10T02:00:30Z'), new Date('2020-01-01T00:00:00Z'))?.toISOString(), '2026-06-10T02:00:00.000Z', 'six years of minutes are not walked');
    assert.equal(minutely.timesBetween(new Date('2026-06-10T00:00:00Z'), new Date('2026-06-11T00:00:00Z'), 3).map((d) => d.toISOString()).join(), '2026-06-10T23:58:00.000Z,2026-06-10T23:59:00.000Z,2026-06-11T00:00:00.000Z', 'the newest are kept');
  });
});

describe('cronTimes(): bad input', () => {
  it('names what is wrong', () => {
    assert.throws(() => cronTimes('', 'UTC'), /needs a cron expression/);
    assert.throws(() => cronTimes('61 * * * *', 'UTC'), RangeError);
    assert.throws(() => cronTimes('0 0 * * * *', 'UTC'), /not valid/, 'six fields (seconds) are refused: a tick is a minute');
    assert.throws(() => cronTimes('* * * * *', 'Mars/Olympus'), /not an IANA zone/);
    assert.throws(() => checkZone(''), /IANA zone name/);
    assert.equal(cronTimes('@daily', 'Europe/Berlin').next(new Date('2026-01-01T12:00:00Z'))?.toISOString(), '2026-01-01T23:00:00.000Z', 'nicknames work');
  });
});
