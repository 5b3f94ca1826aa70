// scripts/test-lanes.mjs, the runner behind `npm test`: every file runs once, a free lane takes the
// next file, a file's output comes out in one piece, a failing file is reported, and a file that
// outlives its limit is killed with every process it started; files run together in one process
// count each, and when that process fails, each of its files runs again alone and its own result counts. The files here are small node
// scripts; the lanes' emulators are a counter (the real ones are started by every other test file).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

interface LaneRun {
  results: Array<{ file: string; lane: number; code: number; ms: number; timedOut: boolean; batch?: string; digest?: string }>;
  notRun: string[];
  lanes: Array<{ files: number; busyMs: number; emulatorStarts: number }>;
  batchesRunAgain: string[];
}
interface LaneOptions {
  files: string[];
  batches?: Map<string, string[]>;
  lanes: number;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  startLaneEmulators?: () => Promise<{ env: Record<string, string>; stop(): Promise<void> }>;
  emulatorLifetimeMs?: number;
  fileTimeoutMs?: number;
  print?: (text: string) => void;
}

let runInLanes: (options: LaneOptions) => Promise<LaneRun>;
let failureDigest: (output: string, maxLines?: number) => string;
let dir: string;

/** Writes a node script into the test's folder; returns its path. */
function script(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, body);
  return path;
}

/** Whether a process with this PID still runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('scripts/test-lanes.mjs', () => {
  before(async () => {
    ({ runInLanes, failureDigest } = (await import(join(ROOT, 'scripts', 'test-lanes.mjs'))) as { runInLanes: typeof runInLanes; failureDigest: typeof failureDigest });
    dir = mkdtempSync(join(tmpdir(), 'test-lanes-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('runs every file once, a free lane taking the next one, each output in one piece, with its lane\'s emulators', async () => {
    // Each file prints its name, waits, then prints it again with its lane's emulators: two files
    // side by side would interleave their lines if their output were not kept until they end.
    const say = (name: string, waitMs: number) => script(`${name}.mjs`, `console.log('${name} begins');\nsetTimeout(() => console.log('${name} ends on', process.env.FAKE_EMULATORS), ${waitMs});\n`);
    const slow = say('slow', 4_000);
    const quick = ['q1', 'q2', 'q3'].map((n) => say(n, 50));
    let started = 0;
    let stopped = 0;
    const printed: string[] = [];
    const run = await runInLanes({
      files: [slow, ...quick], lanes: 2, command: process.execPath, args: [], env: process.env,
      startLaneEmulators: async () => {
        started += 1;
        return { env: { FAKE_EMULATORS: `emulators-${started}` }, stop: async () => { stopped += 1; } };
      },
      print: (text) => printed.push(text),
    });
    assert.deepEqual(run.notRun, []);
    assert.deepEqual(run.results.map((r) => r.file).sort(), [slow, ...quick].sort(), 'every file ran once');
    assert.ok(run.results.every((r) => r.code === 0 && !r.timedOut));
    const laneOf = (file: string) => run.results.find((r) => r.file === file)!.lane;
    assert.ok(quick.every((f) => laneOf(f) !== laneOf(slow)), 'the other lane took every quick file while the slow one ran');
    assert.deepEqual(run.lanes.map((l) => l.files).sort(), [1, 3]);
    assert.equal(started, 2, 'each lane started its emulators once');
    assert.equal(stopped, 2, 'and stopped them at the end');
    assert.equal(printed.length, 4, 'one piece per file');
    for (const name of ['slow', 'q1', 'q2', 'q3']) {
      const piece = printed.find((p) => p.includes(`${name}.mjs: passed`));
      assert.ok(piece, `${name}'s piece`);
      assert.match(piece, new RegExp(`${name} begins\\n${name} ends on emulators-\\d\\n$`), `${name}'s lines together, after its header`);
    }
  });

  it('reports a failing file with its exit code, and starts a lane\'s emulators again once they are past their lifetime', async () => {
    const fails = script('fails.mjs', "console.error('something broke');\nprocess.exit(3);\n");
    const passes = script('passes.mjs', '');
    let started = 0;
    const printed: string[] = [];
    const run = await runInLanes({
      files: [fails, passes], lanes: 1, command: process.execPath, args: [], env: process.env, emulatorLifetimeMs: 0,
      startLaneEmulators: async () => {
        started += 1;
        return { env: {}, stop: async () => {} };
      },
      print: (text) => printed.push(text),
    });
    assert.equal(run.results.find((r) => r.file === fails)?.code, 3);
    assert.equal(run.results.find((r) => r.file === passes)?.code, 0);
    assert.match(printed.join(''), /fails\.mjs: FAILED \(exit code 3\) in [\d.]+ s \(lane 1\) ──\nsomething broke\n/);
    assert.equal(started, 2, 'emulators past their lifetime are started again before the next file');
    assert.equal(run.results.find((r) => r.file === fails)?.digest, 'something broke\n', 'a failed file keeps the end of its output, for the summary');
    assert.equal(run.results.find((r) => r.file === passes)?.digest, undefined, 'a passed one keeps none');
  });

  it('digests a failed file\'s output: the spec reporter\'s failing-tests list when there is one, else the last lines, cut to a limit', () => {
    const spec = ['✔ one', '✖ two (3ms)', 'ℹ fail 1', '', '✖ failing tests:', '', 'test at x.ts:1:1', '✖ two (3ms)', '  AssertionError: 1 !== 2'].join('\n');
    assert.equal(failureDigest(spec), ['✖ failing tests:', '', 'test at x.ts:1:1', '✖ two (3ms)', '  AssertionError: 1 !== 2'].join('\n'));
    const many = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n');
    assert.equal(failureDigest(many, 3), 'line 97\nline 98\nline 99', 'without a list, the last lines');
    const long = ['✖ failing tests:', ...Array.from({ length: 10 }, (_, i) => `e${i}`)].join('\n');
    assert.equal(failureDigest(long, 3), '✖ failing tests:\ne0\ne1\n… 8 more line(s): see the file\'s own output above');
  });

  it('counts each file of a batch that passed, starting no emulators for it; when a batch fails, runs each of its files again alone, and their own results count', async () => {
    // `poisoned.mjs` fails only in a process where `poisons.mjs` ran first (what one file can leave
    // behind for another in a shared process); `broken.mjs` fails anywhere.
    const flag = 'globalThis.__poisoned';
    const poisons = script('poisons.mjs', `${flag} = true;\n`);
    const poisoned = script('poisoned.mjs', `if (${flag}) { console.error('left behind by another file'); process.exitCode = 4; }\n`);
    const broken = script('broken.mjs', "console.error('broken alone too');\nprocess.exitCode = 5;\n");
    const fine = [script('fine1.mjs', ''), script('fine2.mjs', '')];
    const entry = (name: string, members: string[]) => script(name, members.map((m) => `import ${JSON.stringify(`file://${m}`)};\n`).join(''));
    const good = entry('batch-good.mjs', fine);
    const bad = entry('batch-bad.mjs', [poisons, poisoned, broken]);
    const printed: string[] = [];
    let started = 0;
    const run = await runInLanes({
      files: [good, bad], batches: new Map([[good, fine], [bad, [poisons, poisoned, broken]]]), lanes: 1, command: process.execPath, args: [], env: process.env,
      startLaneEmulators: async () => {
        started += 1;
        return { env: {}, stop: async () => {} };
      },
      print: (text) => printed.push(text),
    });
    assert.deepEqual(run.results.map((r) => r.file).sort(), [...fine, poisons, poisoned, broken].sort(), 'each file has one result, the batches none of their own');
    assert.ok(fine.every((f) => run.results.find((r) => r.file === f)?.batch === good), 'the passing batch counted its files');
    assert.deepEqual(run.batchesRunAgain, [bad]);
    const code = (f: string) => run.results.find((r) => r.file === f)?.code;
    assert.equal(code(poisons), 0);
    assert.equal(code(poisoned), 0, 'alone, the file that failed for another one passes');
    assert.equal(code(broken), 5, 'alone, the broken file still fails, with its own exit code');
    assert.equal(run.lanes[0]!.files, 5);
    assert.equal(started, 1, 'the batches started no emulators; the files run alone afterwards did, once');
    const text = printed.join('');
    assert.match(text, /2 files in one process \(.*fine1\.mjs, .*fine2\.mjs\): passed/);
    assert.match(text, /3 files in one process \(.*\): FAILED \(exit code \d\) in [\d.]+ s \(lane 1\); each runs again alone/);
    assert.match(text, /broken\.mjs: FAILED \(exit code 5\)/);
  });

  it('kills a file past its limit together with the processes it started', { timeout: 30_000 }, async () => {
    const pidFile = join(dir, 'grandchild.pid');
    const hangs = script('hangs.mjs', [
      "import { spawn } from 'node:child_process';",
      "import { writeFileSync } from 'node:fs';",
      "const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });",
      `writeFileSync(${JSON.stringify(pidFile)}, String(child.pid));`,
      "console.log('hanging');",
      'setInterval(() => {}, 1000);',
    ].join('\n'));
    const printed: string[] = [];
    const run = await runInLanes({
      files: [hangs], lanes: 1, command: process.execPath, args: [], env: process.env, fileTimeoutMs: 2_000,
      startLaneEmulators: async () => ({ env: {}, stop: async () => {} }),
      print: (text) => printed.push(text),
    });
    const [result] = run.results;
    assert.equal(result?.timedOut, true);
    assert.notEqual(result?.code, 0);
    assert.match(printed.join(''), /hangs\.mjs: KILLED after 2 s in [\d.]+ s \(lane 1\) ──\nhanging\n/);
    const grandchild = Number(readFileSync(pidFile, 'utf8'));
    const deadline = Date.now() + 5_000;
    while (alive(grandchild) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const survived = alive(grandchild);
    if (survived) process.kill(grandchild, 'SIGKILL'); // this test's own process, stopped by its PID
    assert.equal(survived, false, 'the process the file started went with it');
  });
});
