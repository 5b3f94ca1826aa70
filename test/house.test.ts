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

/** Where lock fields may be written: the transitions, the field codec, and the one lock-writing part. */
const LOCK_WRITERS = new Set(['rules/transitions.ts', 'rules/lock-fields.ts', 'store/locks.ts']);

/** Every place in `file` that writes a `lock_` property: an object literal's member, or an assignment to one. */
function lockFieldWrites(file: string): string[] {
  const source = parsed.get(file)!;
  const found: string[] = [];
  const where = (node: ts.Node, what: string): string => `${name(file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${what}`;
  const isLockName = (node: ts.Node | undefined): boolean =>
    node !== undefined && (ts.isIdentifier(node) || ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && node.text.startsWith('lock_');
  const visit = (node: ts.Node): void => {
    if ((ts.isPropertyAssignment(node) || ts.isShorthandPropertyAssignment(node)) && isLockName(node.name)) found.push(where(node, node.name.getText()));
    if (ts.isBinaryExpression(node) && node.operatorToken.kind >= ts.SyntaxKind.FirstAssignment && node.operatorToken.kind <= ts.SyntaxKind.LastAssignment) {
      const target = node.left;
      if (ts.isPropertyAccessExpression(target) && isLockName(target.name)) found.push(where(node, target.getText()));
      if (ts.isElementAccessExpression(target) && isLockName(target.argumentExpression)) found.push(where(node, target.getText()));
    }
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'writeLock') found.push(where(node, 'writeLock()'));
    ts.forEachChild(node, visit);
  };
  visit(source);
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

  it('writes lock fields only in the transitions, the field codec and the lock part (docs/design.md, section 15)', () => {
    const outside = files.filter((file) => !LOCK_WRITERS.has(name(file))).flatMap(lockFieldWrites);
    assert.deepEqual(outside, []);
    // The check sees what it looks for: the codec writes every field, and the lock writer calls it.
    assert.ok(lockFieldWrites(join(src, 'rules', 'lock-fields.ts')).some((w) => w.includes('lock_seq')), 'lock-fields.ts writes lock_seq');
    assert.ok(lockFieldWrites(join(src, 'store', 'locks.ts')).some((w) => w.endsWith('writeLock()')), 'locks.ts calls writeLock()');
  });
});
