/**
 * `npm run model:mutants`: the model's power, measured. Each known fix, reverted in turn (a mutant:
 * model/mutants/<name>.patch), must be found by the model: for each mutant, on a temporary copy of
 * the repository with the patch applied (the checkout is never edited), the model runs under
 * several seeds without shrinking, each up to a cap of sequences; the median number of sequences to
 * a counterexample must be within the cap. Exits 1 when a mutant is not found at the median, or
 * when a patch no longer applies (its fix moved: the patch must be written again).
 *
 *   npm run model:mutants                                   (every mutant, seeds 1-5, cap 500)
 *   npm run model:mutants -- --seeds 7 --cap 300            (seeds 1-7; or a list: --seeds 3,9,11)
 *   npm run model:mutants -- --mutants cancel-strands-alert (some of them)
 *   npm run model:mutants -- --control                      (also the code as it is, under the same seeds:
 *                                                            it must hold every promise, or the counts mean nothing)
 *   npm run model:mutants -- --verify                       (each mutant brings its defect back: its known
 *                                                            sequence breaks its promise, its promises-suite
 *                                                            scenario fails; no model search)
 *
 * A mutant is a patch file whose first line says what it reverts; `known:` names the title of its
 * sequence in model/scenarios.ts and `test:` (part of) the name of its promises-suite scenario, both
 * optional; then the diff (`git diff -U1 -- src`). Adding a mutant is adding a file.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

/** The repository: the checkout this file is in. */
const ROOT = resolve(__dirname, '..');
const MUTANTS_DIR = join(ROOT, 'model', 'mutants');
/** What a copy holds: the code under test, the model, and what the model and the scenarios import. */
const COPIED = ['src', 'model', 'test/support', 'test/promises', 'package.json', 'tsconfig.json'];

/** One mutant: a fix reverted. */
export interface Mutant {
  name: string;
  file: string;
  /** The patch's first line: what it reverts. */
  description: string;
  /** The title of its sequence in model/scenarios.ts, if it has one. */
  known: string | undefined;
  /** Part of the name of its promises-suite scenario, if it has one. */
  test: string | undefined;
}

/** One search: a mutant under one seed. */
interface Search {
  seed: number;
  /** Sequences generated until the counterexample (the first that broke a promise), or undefined when none was found within the cap. */
  found: number | undefined;
  /** Sequences run in all. */
  sequences: number;
  operations: number;
  wallMs: number;
  /** What broke (the first violation), or why the search gave no answer. */
  note: string;
}

/** Reads every mutant in model/mutants (or `dir`), sorted by name. */
export function readMutants(dir = MUTANTS_DIR): Mutant[] {
  return readdirSync(dir).filter((f) => f.endsWith('.patch')).sort().map((f) => {
    const text = readFileSync(join(dir, f), 'utf8');
    const head = text.slice(0, Math.max(0, text.indexOf('diff --git'))).split('\n').map((l) => l.trim()).filter((l) => l !== '');
    const field = (name: string): string | undefined => head.find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim();
    return { name: f.slice(0, -'.patch'.length), file: join(dir, f), description: head[0] ?? '', known: field('known'), test: field('test') };
  });
}

/** Whether the patch applies to the checkout as it is (`git apply --check`): the error when it does not. */
function applies(mutant: Mutant, dir = ROOT): string | undefined {
  const r = spawnSync('git', ['apply', '--check', mutant.file], { cwd: dir, encoding: 'utf8' });
  return r.status === 0 ? undefined : (r.stderr || r.stdout).trim();
}

/** The code as it is: no fix reverted (`--control`). */
const CONTROL: Mutant = { name: 'control', file: '', description: 'the code as it is, no fix reverted: every promise must hold', known: undefined, test: undefined };

/** A temporary copy of the repository with the mutant applied (none for the control); node_modules linked. */
function copyWith(mutant: Mutant): string {
  const dir = mkdtempSync(join(tmpdir(), `locker-mutant-${mutant.name}-`));
  for (const part of COPIED) cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(dir, 'node_modules'));
  if (mutant === CONTROL) return dir;
  const error = applies(mutant, dir);
  if (error) throw new Error(`${mutant.name}: the patch does not apply to the copy: ${error}`);
  const r = spawnSync('git', ['apply', mutant.file], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${mutant.name}: git apply failed: ${r.stderr}`);
  return dir;
}

/** The child running now, to end with this process. */
let running: ReturnType<typeof spawn> | undefined;

/** Runs `node --import tsx <args>` in `cwd`; resolves to its exit code and output. Killed (by its pid) past `limitMs`. */
function runNode(cwd: string, args: string[], limitMs: number): Promise<{ code: number | null; out: string; timedOut: boolean }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    running = child;
    let out = '';
    let timedOut = false;
    child.stdout.on('data', (b: Buffer) => { out += b.toString(); });
    child.stderr.on('data', (b: Buffer) => { out += b.toString(); });
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, limitMs);
    child.on('close', (code) => {
      running = undefined;
      clearTimeout(timer);
      done({ code, out, timedOut });
    });
  });
}

/** The model under one seed in `dir`, up to `cap` sequences, stopping at the first counterexample. */
async function search(dir: string, seed: number, cap: number, maxCommands: number, limitMs: number): Promise<Search> {
  const r = await runNode(dir, ['model/main.ts', '--seed', String(seed), '--runs', String(cap), '--max-commands', String(maxCommands), '--no-shrink'], limitMs);
  const last = r.out.trim().split('\n').reverse().find((l) => l.startsWith('{'));
  if (r.timedOut || !last) return { seed, found: undefined, sequences: 0, operations: 0, wallMs: limitMs, note: r.timedOut ? `stopped after ${limitMs / 1000} s` : `no result: ${r.out.slice(-300)}` };
  const result = JSON.parse(last) as { generated: number; sequences: number; operations: number; wallMs: number; failure?: { violations: Array<{ promise: string; text: string }> } };
  const v = result.failure?.violations[0];
  return {
    seed, found: result.failure ? result.generated : undefined, sequences: result.sequences, operations: result.operations, wallMs: result.wallMs,
    note: v ? `(${v.promise}) ${v.text}` : 'every promise held',
  };
}

/** The median of `values` (undefined, not found, counts as above every number). */
export function median(values: ReadonlyArray<number | undefined>): number | undefined {
  const sorted = [...values].sort((a, b) => (a ?? Infinity) - (b ?? Infinity));
  if (sorted.length === 0) return undefined;
  const mid = Math.floor((sorted.length - 1) / 2);
  const lo = sorted[mid];
  const hi = sorted[sorted.length - 1 - mid];
  return lo === undefined || hi === undefined ? undefined : (lo + hi) / 2;
}

/** Checks that the mutant brings its defect back: its known sequence breaks its promise, its promises-suite scenario fails. */
async function verify(dir: string, mutant: Mutant): Promise<string[]> {
  const problems: string[] = [];
  if (mutant.known) {
    const r = await runNode(dir, ['model/main.ts', '--known'], 300_000);
    const line = r.out.split('\n').find((l) => l.includes(`, ${mutant.known}`));
    if (!line) problems.push(`no known sequence titled "${mutant.known}"`);
    else if (!line.startsWith('UNEXPECTED')) problems.push(`its known sequence holds every promise: ${line}`);
    else console.log(`  known sequence broken: ${line}`);
  }
  if (mutant.test) {
    const pattern = mutant.test.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const r = await runNode(dir, ['--test', '--test-reporter=spec', `--test-name-pattern=${pattern}`, 'test/promises/promises.memory.test.ts'], 300_000);
    const failed = /# fail ([1-9]\d*)/.exec(r.out)?.[1] ?? /ℹ fail ([1-9]\d*)/.exec(r.out)?.[1];
    if (failed === undefined) problems.push(`its promises-suite scenario "${mutant.test}" passes (or did not run)`);
    else console.log(`  promises-suite scenario "${mutant.test}": ${failed} failing`);
  }
  if (!mutant.known && !mutant.test) problems.push('no known sequence and no scenario named to verify it');
  return problems;
}

function seedsOf(text: string): number[] {
  if (text.includes(',')) return text.split(',').map(Number);
  return Array.from({ length: Number(text) }, (_, i) => i + 1);
}

function cell(found: number | undefined, cap: number): string {
  return found === undefined ? `>${cap}` : String(found);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      seeds: { type: 'string', default: '5' },
      cap: { type: 'string', default: '500' },
      mutants: { type: 'string', default: '' },
      'max-commands': { type: 'string', default: '40' },
      'limit-s': { type: 'string', default: '1800' },
      verify: { type: 'boolean', default: false },
      control: { type: 'boolean', default: false },
    },
  });
  const seeds = seedsOf(values.seeds);
  const cap = Number(values.cap);
  const maxCommands = Number(values['max-commands']);
  const limitMs = Number(values['limit-s']) * 1000;
  if (seeds.some((s) => !Number.isSafeInteger(s)) || seeds.length === 0 || !Number.isSafeInteger(cap) || cap < 1 || !(limitMs > 0)) {
    console.error('usage: npm run model:mutants -- [--seeds N | --seeds a,b,c] [--cap N] [--mutants m1,m2] [--max-commands N] [--limit-s S] [--control] [--verify]');
    return 2;
  }
  const wanted = values.mutants.split(',').filter((m) => m !== '');
  const all = readMutants();
  const unknown = wanted.filter((w) => !all.some((m) => m.name === w));
  if (unknown.length > 0) {
    console.error(`no such mutant: ${unknown.join(', ')}; there are ${all.map((m) => m.name).join(', ')}`);
    return 2;
  }
  const mutants = wanted.length > 0 ? all.filter((m) => wanted.includes(m.name)) : all;
  let bad = 0;
  const moved = mutants.filter((m) => {
    const error = applies(m);
    if (error) console.log(`NO LONGER APPLIES: ${m.name} (${m.description}): the fix moved; write the patch again\n  ${error.split('\n').join('\n  ')}`);
    return error !== undefined;
  });
  bad += moved.length;
  const rows: string[] = [];
  const results: Array<{ mutant: string; searches: Search[]; median: number | undefined }> = [];
  const runs = [...mutants.filter((m) => !moved.includes(m)), ...(values.control && !values.verify ? [CONTROL] : [])];
  let current: string | undefined;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      running?.kill('SIGKILL'); // the model run goes with this one, and so does the copy
      if (current) rmSync(current, { recursive: true, force: true });
      process.exit(130);
    });
  }
  for (const mutant of runs) {
    const dir = copyWith(mutant);
    current = dir;
    try {
      console.log(`mutant ${mutant.name}: ${mutant.description}`);
      if (values.verify) {
        const problems = await verify(dir, mutant);
        for (const p of problems) console.log(`  DOES NOT BRING ITS DEFECT BACK: ${p}`);
        if (problems.length > 0) bad++;
        continue;
      }
      const searches: Search[] = [];
      for (const seed of seeds) {
        const s = await search(dir, seed, cap, maxCommands, limitMs);
        searches.push(s);
        console.log(`  seed ${seed}: ${s.found === undefined ? `not found in ${cap} sequences` : `found at sequence ${s.found}`}, ${s.operations} operations, ${(s.wallMs / 1000).toFixed(1)} s: ${s.note}`);
      }
      const m = median(searches.map((s) => s.found));
      const found = m !== undefined && m <= cap;
      // The control must hold every promise under every seed; a mutant must be found at the median.
      if (mutant === CONTROL ? searches.some((s) => s.found !== undefined || s.note !== 'every promise held') : !found) bad++;
      results.push({ mutant: mutant.name, searches, median: m });
      const ops = median(searches.map((s) => s.operations));
      const wall = searches.reduce((t, s) => t + s.wallMs, 0);
      rows.push(`| ${mutant.name} | ${searches.map((s) => cell(s.found, cap)).join(' | ')} | ${m === undefined ? `>${cap}` : m} | ${ops ?? '-'} | ${(wall / 1000).toFixed(0)} s |`);
      console.log(mutant === CONTROL ? `  control: ${searches.every((s) => s.note === 'every promise held') ? 'every promise held under every seed' : 'A PROMISE BROKE WITH NO FIX REVERTED: the mutants\' counts mean nothing until it is fixed'}` : `  median: ${m === undefined ? `>${cap} (NOT FOUND)` : m} sequences`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (rows.length > 0) {
    console.log(`\n| mutant | ${seeds.map((s) => `seed ${s}`).join(' | ')} | median sequences | median operations | wall time |`);
    console.log(`| --- | ${seeds.map(() => '---').join(' | ')} | --- | --- | --- |`);
    for (const r of rows) console.log(r);
    console.log(JSON.stringify({ cap, seeds, maxCommands, results }));
  }
  console.log(bad === 0 ? `model:mutants: every mutant ${values.verify ? 'brings its defect back' : `found within ${cap} sequences at the median`}` : `model:mutants: ${bad} mutant(s) ${values.verify ? 'not verified' : 'not found within the cap at the median, or no longer applying'}`);
  return bad === 0 ? 0 : 1;
}

if (require.main === module) {
  main().then((code) => { process.exitCode = code; }, (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
