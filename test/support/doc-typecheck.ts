/**
 * The type-check of every TypeScript block of the documentation (README.md and every page under
 * docs/) against the library, as one program: the blocks written as files with their imports of
 * `datastore-locker` pointed at src/index, checked with the project's tsconfig.json (unused locals
 * allowed: a block shows a fragment). Building that program is the slow part, and several test
 * files ask for it (the README's test for every page, the deployment and bulk-kickoff guides' for
 * theirs), so within one `npm test` it is built once: scripts/test.mjs names a folder in
 * LOCKER_TEST_CACHE, and the result is kept there under a hash of everything it depends on (every
 * block, every file under src/, tsconfig.json and the TypeScript version). Any change to those
 * builds it again; without the variable it is always built.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { docBlocks, docPages, ROOT, type DocBlock } from './doc-blocks';

/** A diagnostic TypeScript gave for one block. */
export interface BlockProblem {
  /** The page, as a repository path. */
  page: string;
  /** The block's place among the page's `ts` blocks, from 0. */
  index: number;
  /** TypeScript's message. */
  message: string;
}

/** Every file under `dir`, as sorted repository paths. */
function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    return e.isDirectory() ? filesUnder(path) : [path];
  }).sort();
}

/** A hash of everything the type-check reads that can change between runs. */
function inputsHash(blocks: DocBlock[]): string {
  const hash = createHash('sha256').update(`typescript ${ts.version}\n`).update(readFileSync(join(ROOT, 'tsconfig.json')));
  for (const block of blocks) hash.update(`\0block ${block.page}#${block.index}\0`).update(block.code);
  for (const file of filesUnder('src')) hash.update(`\0file ${file}\0`).update(readFileSync(join(ROOT, file)));
  return hash.digest('hex');
}

/** Builds the program over every block and returns each diagnostic of a block. */
function typeCheck(blocks: DocBlock[]): BlockProblem[] {
  const dir = join(ROOT, 'test', `.doc-typecheck-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  try {
    const index = relative(dir, join(ROOT, 'src', 'index')).replace(/\\/g, '/');
    const firestore = relative(dir, join(ROOT, 'src', 'firestore')).replace(/\\/g, '/');
    const files = blocks.map((block) => {
      const file = join(dir, `${block.page.replace(/[/.]/g, '_')}-${block.index}.ts`);
      const code = block.code.replace(/from 'datastore-locker'/g, `from '${index}'`).replace(/from 'datastore-locker\/firestore'/g, `from '${firestore}'`);
      writeFileSync(file, `${code}\nexport {};\n`);
      return { block, file };
    });
    const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
    if (!config) throw new Error('tsconfig.json could not be read');
    const program = ts.createProgram(files.map((f) => f.file), { ...config.options, noEmit: true, noUnusedLocals: false });
    return files.flatMap(({ block, file }) => ts.getPreEmitDiagnostics(program, program.getSourceFile(file))
      .map((d) => ({ page: block.page, index: block.index, message: ts.flattenDiagnosticMessageText(d.messageText, '\n') })));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The TypeScript blocks the type-check covers: every `ts` block of every documentation page. */
export function typeCheckedBlocks(): DocBlock[] {
  return docPages().flatMap((page) => docBlocks(page, 'ts'));
}

/**
 * Every diagnostic of every TypeScript block of the documentation, type-checked against the
 * library; built once per `npm test` run (see the file's comment). A file that asks while another
 * builds it (files run side by side) waits for that result rather than building it again.
 */
export async function docBlockProblems(): Promise<BlockProblem[]> {
  const blocks = typeCheckedBlocks();
  const cacheDir = process.env.LOCKER_TEST_CACHE;
  if (cacheDir === undefined || cacheDir === '') return typeCheck(blocks);
  const cached = join(cacheDir, `doc-typecheck-${inputsHash(blocks)}.json`);
  const building = `${cached}.building`;
  for (;;) {
    if (existsSync(cached)) return JSON.parse(readFileSync(cached, 'utf8')) as BlockProblem[];
    let claimed: number | undefined;
    try {
      claimed = openSync(building, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (claimed === undefined) {
      // Another file builds it: wait for its result, or build it here if that file is gone.
      const owner = Number(readFileSync(building, 'utf8'));
      if (owner > 0 && !alive(owner)) rmSync(building, { force: true });
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    try {
      writeFileSync(claimed, String(process.pid));
      closeSync(claimed);
      const problems = typeCheck(blocks);
      const partial = `${cached}.${process.pid}`;
      writeFileSync(partial, JSON.stringify(problems));
      renameSync(partial, cached); // whole or absent for a file reading it side by side
      return problems;
    } finally {
      rmSync(building, { force: true });
    }
  }
}

/** Whether a process runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
