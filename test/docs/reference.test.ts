// The reference (docs/reference/*.md) is kept true by this test. Each table the reference checks
// is preceded by a marker comment, `<!-- reference: WHAT NAME -->`, and its first column names
// what the code has, in backticks. The code's side is derived from the code itself: interface
// members through the TypeScript compiler, defaults, errors and headers from the package's
// exports. Both directions fail: a name in the code without its row, and a row the code lacks.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import * as library from '../../src/index';

const root = join(__dirname, '..', '..');
const referenceDir = join(root, 'docs', 'reference');

// ---------------------------------------------------------------------------------------------
// The reference's side: marked tables.

interface Table { page: string; what: string; name: string; args: Record<string, string>; rows: string[][] }

/** The cells of a Markdown table row, trimmed (escaped pipes `\|` kept inside a cell). */
function cells(line: string): string[] {
  return line.replace(/\\\|/g, '\u0000').split('|').slice(1, -1).map((c) => c.replace(/\u0000/g, '|').trim());
}

function markedTables(): Table[] {
  const tables: Table[] = [];
  for (const page of readdirSync(referenceDir).filter((f) => f.endsWith('.md'))) {
    const lines = readFileSync(join(referenceDir, page), 'utf8').split('\n');
    lines.forEach((line, i) => {
      const marker = /^<!-- reference: (\w+)(?: (\w+))?((?: \w+=\w+)*) -->$/.exec(line);
      if (!marker) return;
      const args = Object.fromEntries([...marker[3]!.matchAll(/(\w+)=(\w+)/g)].map((m) => [m[1]!, m[2]!]));
      const body: string[][] = [];
      for (let j = i + 1; j < lines.length && lines[j]!.startsWith('|'); j++) body.push(cells(lines[j]!));
      assert.ok(body.length >= 3, `${page}: a table follows the marker "${line}"`);
      tables.push({ page, what: marker[1]!, name: marker[2] ?? '', args, rows: body.slice(2) });
    });
  }
  return tables;
}

/** The first code span of a cell (`leaseDuration`, `X-Lock-Key`), or the whole cell without link syntax. */
function named(cell: string): string {
  const code = /`([^`]+)`/.exec(cell);
  return code ? code[1]! : cell;
}

/** An option row's name: `contention.attempts`; `schedule(path, …)` is `schedule`. */
function rowName(cell: string): string {
  return named(cell).replace(/\(.*$/, '');
}

const tables = markedTables();
const tablesOf = (what: string): Table[] => tables.filter((t) => t.what === what);

// ---------------------------------------------------------------------------------------------
// The code's side: the package's exported types, read by the compiler.

// Both entries of the package: `datastore-locker` (src/index.ts) and `datastore-locker/firestore`.
const ENTRIES = [join(root, 'src', 'index.ts'), join(root, 'src', 'firestore.ts')];
const program = ts.createProgram(ENTRIES, { strict: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, types: ['node'] });
const checker = program.getTypeChecker();
const entry = program.getSourceFile(ENTRIES[0]!)!;
const exported = new Map(ENTRIES.flatMap((file) => checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file)!)!)).map((s) => [s.name, s]));

/** The declared type of an exported interface or type alias. */
function exportedType(name: string): ts.Type {
  const symbol = exported.get(name);
  assert.ok(symbol, `${name} is exported by src/index.ts or src/firestore.ts`);
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  return checker.getDeclaredTypeOfSymbol(target);
}

/** Property names of a type (of each object member of a union, merged). */
function members(type: ts.Type): string[] {
  return checker.getPropertiesOfType(type).map((p) => p.name);
}

/**
 * The members of an option that is itself an options object written inline (`contention`,
 * `duplicateCache`, `oidc`), which the reference lists as dotted rows; undefined for any other.
 */
function inlineMembers(type: ts.Type, option: string): string[] | undefined {
  const symbol = checker.getPropertyOfType(type, option)!;
  const declared = checker.getTypeOfSymbolAtLocation(symbol, entry);
  const parts = declared.isUnion() ? declared.types : [declared];
  const objects = parts.filter((t) => (t.flags & ts.TypeFlags.Object) !== 0
    && t.symbol?.declarations?.[0]?.kind === ts.SyntaxKind.TypeLiteral // written inline, not a named or mapped type
    && checker.getSignaturesOfType(t, ts.SignatureKind.Call).length === 0
    && !checker.getPropertiesOfType(t).some((p) => (p.flags & ts.SymbolFlags.Method) !== 0)); // a plug-in (`{ send() }`), not options
  return objects.length === 1 ? members(objects[0]!) : undefined;
}

/** Every exported interface or type whose name ends in `Options`: each is an options object a user writes. */
const OPTIONS_TYPES = [...exported.keys()].filter((n) => n.endsWith('Options') && exportedType(n).isClassOrInterface());

/** Flattens a defaults object: `{ contention: { attempts: 5 } }` gives `contention.attempts` → 5. */
function flatten(value: object, prefix = ''): Array<[string, unknown]> {
  return Object.entries(value).flatMap(([k, v]): Array<[string, unknown]> =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? flatten(v as object, `${prefix}${k}.`) : [[`${prefix}${k}`, v]]);
}

/** A default as the reference writes it in a code span: `60000`, `'LockerOutbox'`, `['']`, `true`. */
function written(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (Array.isArray(value)) return `[${value.map(written).join(', ')}]`;
  return String(value);
}

// ---------------------------------------------------------------------------------------------

describe('the options reference (docs/reference/options.md)', () => {
  const optionTables = tablesOf('options');

  it('has a table for every exported options type, and names only exported ones', () => {
    const documented = optionTables.map((t) => t.name);
    assert.deepEqual(OPTIONS_TYPES.filter((n) => !documented.includes(n)), [], 'options types without a table');
    for (const name of documented) exportedType(name);
  });

  for (const table of optionTables) {
    it(`${table.name}: one row per option, nested options as dotted rows, and nothing else`, () => {
      const type = exportedType(table.name);
      const expected = members(type).flatMap((option) => [option, ...(inlineMembers(type, option) ?? []).map((m) => `${option}.${m}`)]);
      const rows = table.rows.map((r) => rowName(r[0]!));
      assert.deepEqual([...rows].sort(), [...expected].sort(), `${table.page}: rows of ${table.name}`);
      assert.equal(new Set(rows).size, rows.length, 'each option once');
      for (const row of table.rows) assert.ok(row[1] !== '' && row[2] !== '', `${rowName(row[0]!)}: a default and a rule`);
    });

    if (table.args.defaults) {
      it(`${table.name}: every default in ${table.args.defaults} is the one the table gives`, () => {
        const defaults = (library as unknown as Record<string, object>)[table.args.defaults!];
        assert.ok(defaults && typeof defaults === 'object', `${table.args.defaults} is exported`);
        for (const [option, value] of flatten(defaults)) {
          const row = table.rows.find((r) => rowName(r[0]!) === option);
          assert.ok(row, `${option} has a row`);
          assert.ok(row[1]!.includes(`\`${written(value)}\``), `${option}: the default cell "${row[1]}" gives \`${written(value)}\``);
        }
      });
    }
  }
});

describe('the events reference (docs/reference/events.md)', () => {
  const [table] = tablesOf('events');
  const events = exportedType('LockerEvents');
  const common = members(exportedType('StepEvent'));

  it('lists every event the Locker emits, once, and no other', () => {
    assert.ok(table);
    const rows = table.rows.map((r) => named(r[0]!));
    assert.deepEqual([...rows].sort(), members(events).sort());
  });

  it('gives each event\'s own fields (beside key, seq, attempt), and only those', () => {
    for (const row of table!.rows) {
      const event = named(row[0]!);
      const args = checker.getTypeOfSymbolAtLocation(checker.getPropertyOfType(events, event)!, entry);
      const payload = checker.getTypeArguments(args as ts.TypeReference)[0]!;
      const own = members(payload).filter((m) => !common.includes(m)).sort();
      const given = [...row[2]!.matchAll(/`(\w+)`/g)].map((m) => m[1]!).filter((f) => /^[a-z]/.test(f) && !common.includes(f)).sort(); // type names (DropReason) link, they are not fields
      assert.deepEqual(given, own, `${event}: fields`);
    }
  });
});

describe('the errors reference (docs/reference/errors.md)', () => {
  const [table] = tablesOf('errors');
  const page = readFileSync(join(referenceDir, 'errors.md'), 'utf8');
  const classes = Object.entries(library).filter(([, value]) => typeof value === 'function' && value.prototype instanceof library.LockerError) as Array<[string, new (message: string) => library.LockerError]>;

  it('lists every exported error class with its code and status, and no other', () => {
    assert.ok(table && classes.length > 0);
    const fromCode = classes.map(([name, Class]) => {
      const error = new Class('x');
      return `${name} ${error.code} ${error.status}`;
    }).sort();
    const fromPage = table.rows.map((r) => `${named(r[0]!)} ${named(r[1]!)} ${r[2]}`).sort();
    assert.deepEqual(fromPage, fromCode);
  });

  it('has an entry for each, where its message links to', () => {
    assert.ok(library.ERRORS_REFERENCE_URL.endsWith('/blob/main/docs/reference/errors.md'), 'the link names this page');
    for (const [name, Class] of classes) {
      assert.ok(page.includes(`\n### ${name}\n`), `### ${name}`);
      const message = new Class('what went wrong').message;
      if (name === 'PermanentError') assert.equal(message, 'what went wrong', 'a PermanentError\'s message is the user\'s own');
      else assert.equal(message, `what went wrong (${library.ERRORS_REFERENCE_URL}#${name.toLowerCase()})`);
    }
  });
});

describe('the task headers reference (docs/reference/http.md)', () => {
  it('lists every header the library reads and sends, and no other', () => {
    const [table] = tablesOf('headers');
    assert.ok(table);
    assert.deepEqual(table.rows.map((r) => named(r[0]!).toLowerCase()).sort(), Object.values(library.Headers).sort());
  });
});

describe('member and value tables', () => {
  for (const table of tablesOf('members')) {
    it(`${table.page}: ${table.name} has a row per member, and no other`, () => {
      assert.deepEqual(table.rows.map((r) => rowName(r[0]!)).sort(), members(exportedType(table.name)).sort());
    });
  }
  for (const table of tablesOf('values')) {
    it(`${table.page}: ${table.name} has a row per value, and no other`, () => {
      const values = (library as unknown as Record<string, Record<string, string>>)[table.name];
      assert.ok(values, `${table.name} is exported`);
      assert.deepEqual(table.rows.map((r) => named(r[0]!)).sort(), Object.values(values).sort());
    });
  }
  it('covers the lock fields, the ledger record, the handler\'s context, drop reasons and step states', () => {
    const covered = tables.map((t) => t.name);
    for (const name of ['LockFields', 'LedgerRecord', 'TaskContext', 'TaskInfo', 'SweepResult', 'DropReason', 'StepState']) assert.ok(covered.includes(name), name);
  });
});
