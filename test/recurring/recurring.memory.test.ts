// Recurring work on the in-memory store (the suite runs on both emulators too).
import { recurringSuite } from './recurring-suite';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from '../../src/store/memory/store';
import { TICK_BUDGET_MS } from '../../src/locker';
import { jitterOf, TICK_BATCH } from '../../src/recurring/tick';
import { recurringRig } from './recurring-rig';

recurringSuite('the in-memory store', async () => ({ store: new MemoryStore(), namespace: undefined }));

describe('a tick past its budget (in-memory store)', () => {
  it('stops after its first round, leaves the rest due, and the next tick starts them: each schedule once', async () => {
    const rig = recurringRig(new MemoryStore(), 'budget', Date.UTC(2026, 0, 5, 9, 59, 30));
    let advancing = false;
    const locker = rig.instance({ clock: () => { const t = rig.now; if (advancing) rig.now += TICK_BUDGET_MS + 1_000; return t; } });
    for (let i = 0; i < TICK_BATCH + 20; i++) locker.recurring(`s-${i}`, { cron: '* * * * *', path: '/run' });
    await locker.tick();
    rig.now = Date.UTC(2026, 0, 5, 10, 0, 5);
    advancing = true; // every reading of the clock is a minute later: the budget runs out at once
    const first = await locker.tick();
    advancing = false;
    assert.equal(first.partial, true);
    assert.equal(first.started, TICK_BATCH, 'one round of due schedules, whatever the budget');
    rig.now = Date.UTC(2026, 0, 5, 10, 0, 10);
    const second = await locker.tick();
    assert.equal(second.partial, false);
    assert.equal(second.started, 20);
    await rig.deliverAll();
    assert.equal(rig.runs.length, TICK_BATCH + 20);
    assert.equal(new Set(rig.runs.map((r) => r.schedule)).size, TICK_BATCH + 20, 'each schedule ran once');
    assert.ok(rig.runs.every((r) => r.scheduledAt === '2026-01-05T10:00:00.000Z'));
  });
});

describe('jitter (in-memory store)', () => {
  it('delays a run\'s first step by the same amount for a tick however often it is started, within jitterMs', async () => {
    const rig = recurringRig(new MemoryStore(), 'jitter', Date.UTC(2026, 0, 5, 9, 59, 30));
    const locker = rig.instance();
    locker.recurring('spread', { cron: '0 * * * *', path: '/run', jitterMs: 30 * 60_000 });
    await locker.tick();
    rig.now = Date.UTC(2026, 0, 5, 10, 0, 5);
    await Promise.all([locker.tick(), locker.tick()]);
    const at = new Date(Date.UTC(2026, 0, 5, 10, 0, 0));
    const delay = jitterOf('spread', at, 30 * 60_000);
    assert.ok(delay > 5_000 && delay <= 30 * 60_000, `a delay within the jitter, past the tick's lateness: ${delay}`);
    assert.equal(rig.queue.tasks.length, 1, 'one run');
    assert.equal(rig.queue.tasks[0]!.scheduleTime?.getTime(), at.getTime() + delay, 'its task is scheduled at the tick plus its jitter');
    assert.equal(jitterOf('spread', at, 30 * 60_000), delay, 'the same for the tick every time');
    assert.notEqual(jitterOf('spread', new Date(at.getTime() + 3_600_000), 30 * 60_000), delay, 'another tick, another delay');
    assert.equal(jitterOf('spread', at, 0), 0);
  });
});
