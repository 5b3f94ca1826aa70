// The shape of src/ (docs/design.md, sections 9 and 15): a few files at its top level, no import
// circle (type-only imports included), nothing below the Locker importing it, and lock fields
// written only by the transitions and the one lock-writing part. Read from the source with the
// TypeScript compiler's parser, so a new file is checked the day it is added. And the model drives
// every public method of Locker and of the handler's context (test/support/model-calls.ts), so a
// new feature is in the model the day it is added.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { methodsOfInterface, publicMethodsOfClass, uncalled } from '../support/model-calls';

const src = join(__dirname, '..', '..', 'src');

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
const LOCK_WRITERS = new Set(['rules/transitions.ts', 'rules/lock-fields.ts', 'locks/locks.ts']);

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
    assert.ok(lockFieldWrites(join(src, 'locks', 'locks.ts')).some((w) => w.endsWith('writeLock()')), 'locks.ts calls writeLock()');
  });
});

/** Where the store may be read: the store's own folder and the lock part (and the parse that checks its shape, and the parts that build the ports). */
const STORE_READERS = (file: string): boolean => file.startsWith('store/') || file === 'locks/locks.ts' || file === 'config/options.ts' || file === 'parts.ts';
/** The `Store` methods that read. */
const STORE_READS = new Set(['get', 'read', 'readWithLedger', 'listDue', 'queryLocks', 'findKeys', 'readMany']);

/** Every read of the store in `file`: a read method called on a `store` (`store.get(…)`, `config.store.read(…)`), or the `store` taken out of the configuration. */
function storeReads(file: string): string[] {
  const source = parsed.get(file)!;
  const found: string[] = [];
  const where = (node: ts.Node, what: string): string => `${name(file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${what}`;
  const isStore = (node: ts.Expression): boolean =>
    (ts.isIdentifier(node) && node.text === 'store') || (ts.isPropertyAccessExpression(node) && node.name.text === 'store');
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && STORE_READS.has(node.expression.name.text) && isStore(node.expression.expression)) {
      found.push(where(node, node.expression.getText()));
    }
    if (ts.isPropertyAccessExpression(node) && node.name.text === 'store' && /(config|settings)$/.test(node.expression.getText())) found.push(where(node, node.getText()));
    if (ts.isBindingElement(node) && (node.propertyName ?? node.name).getText() === 'store') found.push(where(node, 'const { store }'));
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Every module-level `new Map/Set/WeakMap/WeakSet` in `file`: state shared by every Locker of the process. */
function moduleLevelCollections(file: string): string[] {
  const source = parsed.get(file)!;
  const found: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const declaration of statement.declarationList.declarations) {
      const init = declaration.initializer;
      if (init && ts.isNewExpression(init) && ts.isIdentifier(init.expression) && ['Map', 'Set', 'WeakMap', 'WeakSet'].includes(init.expression.text)) {
        // A constant lookup table, typed read-only, is not state.
        const type = declaration.type?.getText() ?? '';
        if (/^Readonly(Map|Set)</.test(type)) continue;
        found.push(`${name(file)}:${source.getLineAndCharacterOfPosition(declaration.getStart()).line + 1} ${declaration.name.getText()}`);
      }
    }
  }
  return found;
}

/** Where the whole parsed configuration may be handled: where it is parsed, the parts' builder, and the facade that holds it. */
const WHOLE_CONFIG = (file: string): boolean => file.startsWith('config/') || file === 'parts.ts' || file === 'locker.ts';

/**
 * Every place in `file` that is handed the whole `Config` of `config/options.ts`: the type named
 * other than as the first argument of a `Pick<Config, …>` (or an indexed `Config['x']`), or a
 * `Pick<Parts, …>` that takes `config` (the parts' `config` is the whole of it), or the whole `Parts`.
 */
function wholeConfigs(file: string): string[] {
  const source = parsed.get(file)!;
  const found: string[] = [];
  const where = (node: ts.Node, what: string): string => `${name(file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${what}`;
  const importsConfig = source.statements.some((s) => ts.isImportDeclaration(s) && ts.isStringLiteral(s.moduleSpecifier) && /config\/options$/.test(s.moduleSpecifier.text)
    && s.importClause?.namedBindings !== undefined && ts.isNamedImports(s.importClause.namedBindings)
    && s.importClause.namedBindings.elements.some((e) => e.name.text === 'Config'));
  const visit = (node: ts.Node): void => {
    if (ts.isTypeReferenceNode(node) && ts.isIdentifier(node.typeName)) {
      const ref = node.typeName.text;
      if (importsConfig && ref === 'Config') {
        const parent = node.parent;
        const picked = ts.isTypeReferenceNode(parent) && parent.typeName.getText() === 'Pick' && parent.typeArguments?.[0] === node;
        if (!picked && !ts.isIndexedAccessTypeNode(parent)) found.push(where(node, node.getText()));
      }
      if (ref === 'Pick' && node.typeArguments?.[0]?.getText() === 'Parts' && /'config'/.test(node.typeArguments[1]?.getText() ?? '')) found.push(where(node, node.getText()));
      // The whole of the parts (its `config` included), not a Pick of them.
      if (ref === 'Parts') {
        const parent = node.parent;
        const picked = ts.isTypeReferenceNode(parent) && parent.typeName.getText() === 'Pick' && parent.typeArguments?.[0] === node;
        if (!picked) found.push(where(node, node.getText()));
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('the parts and their ports (docs/design.md, section 15)', () => {
  it('reads the store only in the store and the lock part: every other part goes through the lock part or the read port', () => {
    const outside = files.filter((file) => !STORE_READERS(name(file))).flatMap(storeReads);
    assert.deepEqual(outside, []);
    // The check sees what it looks for: the lock part reads the store.
    assert.ok(storeReads(join(src, 'locks', 'locks.ts')).length > 0, 'locks.ts reads the store');
  });

  it('hands no function the whole configuration: each part and function names the settings it reads (a Pick<Config, …>)', () => {
    assert.deepEqual(files.filter((file) => !WHOLE_CONFIG(name(file))).flatMap(wholeConfigs), []);
    // The check sees what it looks for: the parts' builder takes the whole configuration.
    assert.ok(wholeConfigs(join(src, 'parts.ts')).length > 0, 'parts.ts takes the whole Config');
  });

  it('keeps no mutable Map, Set, WeakMap or WeakSet at module level in src/: state lives in the parts a Locker builds', () => {
    assert.deepEqual(files.flatMap(moduleLevelCollections), []);
  });

  it('has the lock part and the duplicate cache together (locks/): store/ never imports step/, config/ never imports store/', () => {
    const edges = (from: string, to: string): string[] => files.filter((file) => name(file).startsWith(from))
      .flatMap((file) => graph.get(file)!.filter((target) => name(target).startsWith(to)).map((target) => `${name(file)} imports ${name(target)}`));
    assert.deepEqual(edges('store/', 'step/'), []);
    assert.deepEqual(edges('config/', 'store/'), []);
  });

  it('has http/ depend on step/, never step/ on http/: the step code returns an outcome, http maps it to an answer', () => {
    const http = join(src, 'http');
    const stepFiles = files.filter((file) => name(file).startsWith('step/'));
    const intoHttp = stepFiles.flatMap((file) => graph.get(file)!.filter((target) => target.startsWith(http + '/')).map((target) => `${name(file)} imports ${name(target)}`));
    assert.deepEqual(intoHttp, []);
    assert.ok(files.some((file) => name(file).startsWith('http/') && graph.get(file)!.some((t) => name(t).startsWith('step/'))), 'http/ imports step/');
  });
});

describe('the shape of test/', () => {
  // Tests live in folders named for the src/ folder they test, or for what they test of the whole
  // library (its promises under faults, its docs, the example app, the package).
  const WHOLE = ['promises', 'docs', 'example-app', 'package'];
  const test = join(__dirname, '..');
  const testFiles = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name.startsWith('.') ? [] : testFiles(path);
    return e.name.endsWith('.test.ts') ? [relative(test, path)] : [];
  });

  it('mirrors src/: every test file is in a folder of src/ or of the whole library, none at the top or in support/', () => {
    const srcFolders = new Set(readdirSync(src, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name));
    const all = testFiles(test);
    assert.ok(all.length > 100, `found the test files (${all.length})`);
    const misplaced = all.filter((file) => {
      const folder = file.split('/')[0]!;
      return !file.includes('/') || !(srcFolders.has(folder) || WHOLE.includes(folder));
    });
    assert.deepEqual(misplaced, []);
  });
});

describe('the model drives every public method (docs/concepts/model-based-test.md)', () => {
  // A feature the model does not drive is checked only on the paths someone thought of (issue 37):
  // every public method of Locker and of the handler's context is called by a model command.
  const root = join(__dirname, '..', '..');
  const lockerMethods = publicMethodsOfClass(join(src, 'locker.ts'), 'Locker');
  const contextMethods = methodsOfInterface(join(src, 'step', 'handler-types.ts'), 'TaskContext');
  // Methods that make no sense in the model, each with its reason. Nothing else may be left out.
  const EXEMPT: Readonly<Record<string, string>> = {
    emit: 'the events plumbing: the Locker emits, the model listens (locker.on)',
    inspect: 'a read-only view of entities and records for the status page: it writes nothing, so it cannot break a promise',
    statusRouter: 'an Express router factory; its actions are retry(), cancel() and resend(), which the model calls',
    sweepHandler: 'an Express handler factory around sweep(), which the model calls',
    startSweeping: 'a real-time timer around sweep(); the model sweeps on its own clock',
    encodeKey: 'the X-Lock-Key codec, pure; the model sends the headers the Locker built',
    decodeKey: 'the X-Lock-Key codec, pure',
  };
  const modelDir = join(root, 'model');
  const modelSources = (): Map<string, string> => new Map(readdirSync(modelDir).filter((f) => f.endsWith('.ts')).map((f) => [f, readFileSync(join(modelDir, f), 'utf8')]));

  it('reads the public methods from the source', () => {
    for (const m of ['schedule', 'scheduleMany', 'retry', 'cancel', 'resend', 'sweep', 'shutdown', 'handle']) assert.ok(lockerMethods.includes(m), `Locker.${m} found`);
    for (const m of ['schedule', 'complete', 'handBack']) assert.ok(contextMethods.includes(m), `TaskContext.${m} found`);
    assert.ok(!lockerMethods.includes('stop'), 'a private method is not public');
    for (const name of Object.keys(EXEMPT)) assert.ok(lockerMethods.includes(name) || contextMethods.includes(name), `the exemption ${name} names a public method`);
  });

  it('has every public method of Locker and of TaskContext called by a model command (model/*.ts)', () => {
    const sources = modelSources();
    const missing = [
      ...uncalled('Locker', lockerMethods.filter((m) => !(m in EXEMPT)), sources).map((m) => `Locker.${m}`),
      ...uncalled('TaskContext', contextMethods.filter((m) => !(m in EXEMPT)), sources).map((m) => `TaskContext.${m}`),
    ];
    assert.deepEqual(missing, [], `never called by the model: ${missing.join(', ')}; give model/ a command that calls each (or, when it makes no sense in the model, an exemption with its reason above)`);
  });

  it('fails when one call is removed from the model (the check sees what it looks for)', () => {
    const sources = modelSources();
    const world = sources.get('world.ts')!;
    const cut = world.replace('instance.locker.sweep()', 'Promise.resolve({ resent: 0, alerted: 0 })');
    assert.notEqual(cut, world, 'world.ts calls instance.locker.sweep()');
    assert.ok(!uncalled('Locker', ['sweep'], sources).length, 'sweep is called by the model as it is');
    // The model's World.sweep() is still called by its Sweep command: only the call on the Locker counts.
    assert.deepEqual(uncalled('Locker', ['sweep'], new Map([...sources, ['world.ts', cut]])), ['sweep']);
    // The forms a call takes: by a key of literal type, through an alias and .call(), on a cast receiver; another receiver does not count.
    const fixture = new Map([['fixture.ts', [
      "type Act = 'retry' | 'cancel';",
      'function operate(w: { locker: Locker }, action: Act): unknown { return w.locker[action](key); }',
      'const handBack = (ctx as unknown as Partial<TaskContext<E>>).handBack; handBack?.call(ctx);',
      "(ctx as TaskContext<E>)['setResult'](1);",
      'world.fanIn(); notLocker.resend(key);',
    ].join('\n')]]);
    assert.deepEqual(uncalled('Locker', ['retry', 'cancel', 'resend'], fixture), ['resend']);
    assert.deepEqual(uncalled('TaskContext', ['handBack', 'setResult', 'fanIn'], fixture), ['fanIn']);
  });
});
