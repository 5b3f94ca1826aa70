/**
 * What the model calls of the public API, read from its source with the TypeScript compiler's
 * parser (house.test.ts checks that every public method of `Locker` and of the handler's context is
 * called by the model, so the next feature cannot land outside it).
 *
 * - The public methods: the methods of `class Locker` in src/locker.ts that are neither private nor
 *   protected (accessors are not methods), and the methods of `interface TaskContext` in
 *   src/step/handler-types.ts (method signatures, and properties whose type is a function).
 * - The calls: the model names its Locker `locker` (`instance.locker`, `this.locker`) and its
 *   context `ctx`; a call counts for `Locker` when its receiver is so named, and for `TaskContext`
 *   when its receiver is `ctx` (casts and parentheses looked through). Counted: `r.m(…)`,
 *   `r.m.call(…)`, `r['m'](…)`, `r[k](…)` where `k` is declared with a union of string literals (a
 *   parameter's or variable's type, or a type alias of the same file), and `const f = r.m; f(…)`.
 *   A call on anything else, such as the model's own `World.sweep()`, is not counted.
 */
import { readFileSync } from 'node:fs';
import ts from 'typescript';

/** The API surfaces checked, and what the model names their receivers. */
export const RECEIVERS = { Locker: ['locker'], TaskContext: ['ctx'] } as const;
export type Surface = keyof typeof RECEIVERS;

function parse(fileName: string, text: string): ts.SourceFile {
  return ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
}

function isHidden(member: ts.ClassElement): boolean {
  const flags = ts.getCombinedModifierFlags(member as ts.Declaration);
  return (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0 || (member.name !== undefined && ts.isPrivateIdentifier(member.name));
}

/** The public methods of class `className` in `file` (its own, not those it inherits). */
export function publicMethodsOfClass(file: string, className: string, text = readFileSync(file, 'utf8')): string[] {
  const source = parse(file, text);
  const cls = source.statements.find((s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === className);
  if (!cls) throw new Error(`no class ${className} in ${file}`);
  return cls.members.filter((m): m is ts.MethodDeclaration => ts.isMethodDeclaration(m) && !isHidden(m) && ts.isIdentifier(m.name)).map((m) => (m.name as ts.Identifier).text);
}

/** The methods of interface `name` in `file`: method signatures and function-typed properties. Throws when it extends another (the check would miss its methods). */
export function methodsOfInterface(file: string, name: string, text = readFileSync(file, 'utf8')): string[] {
  const source = parse(file, text);
  const decl = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name);
  if (!decl) throw new Error(`no interface ${name} in ${file}`);
  if (decl.heritageClauses?.length) throw new Error(`interface ${name} extends another: read its methods too`);
  const out: string[] = [];
  for (const m of decl.members) {
    if (!m.name || !ts.isIdentifier(m.name)) continue;
    if (ts.isMethodSignature(m) || (ts.isPropertySignature(m) && m.type !== undefined && ts.isFunctionTypeNode(m.type))) out.push(m.name.text);
  }
  return [...new Set(out)];
}

/** The expression without parentheses, `as`, `!` and `<T>` casts. */
function bare(e: ts.Expression): ts.Expression {
  while (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isNonNullExpression(e) || ts.isTypeAssertionExpression(e) || ts.isSatisfiesExpression(e)) e = e.expression;
  return e;
}

/** The name a receiver goes by: `ctx`, `locker` (of `this.locker`, `instance.locker`). */
function receiverName(e: ts.Expression): string | undefined {
  const b = bare(e);
  if (ts.isIdentifier(b)) return b.text;
  if (ts.isPropertyAccessExpression(b)) return b.name.text;
  return undefined;
}

/** The string literals of a type node: a literal, a union of them, or an alias of the same file naming one. */
function literalsOfType(type: ts.TypeNode | undefined, source: ts.SourceFile, depth = 0): string[] {
  if (!type || depth > 5) return [];
  if (ts.isLiteralTypeNode(type) && ts.isStringLiteral(type.literal)) return [type.literal.text];
  if (ts.isUnionTypeNode(type)) return type.types.flatMap((t) => literalsOfType(t, source, depth + 1));
  if (ts.isParenthesizedTypeNode(type)) return literalsOfType(type.type, source, depth + 1);
  if (ts.isTypeReferenceNode(type) && ts.isIdentifier(type.typeName)) {
    const alias = source.statements.find((s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === (type.typeName as ts.Identifier).text);
    return alias ? literalsOfType(alias.type, source, depth + 1) : [];
  }
  return [];
}

/** The string literals an element access's key may be: a literal, or an identifier declared (in an enclosing function or the file) with a literal union type. */
function keysOf(arg: ts.Expression, source: ts.SourceFile): string[] {
  const b = bare(arg);
  if (ts.isStringLiteral(b) || ts.isNoSubstitutionTemplateLiteral(b)) return [b.text];
  if (!ts.isIdentifier(b)) return [];
  for (let n: ts.Node | undefined = b.parent; n; n = n.parent) {
    if (ts.isFunctionLike(n)) {
      const param = n.parameters.find((p) => ts.isIdentifier(p.name) && p.name.text === b.text);
      if (param) return literalsOfType(param.type, source);
    }
  }
  const out: string[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.name.text === b.text) out.push(...literalsOfType(n.type, source));
    ts.forEachChild(n, visit);
  };
  visit(source);
  return out;
}

/** Every method called in `sources` (file name to text), by the name its receiver goes by. */
export function calledMethods(sources: ReadonlyMap<string, string>): Map<string, Set<string>> {
  const called = new Map<string, Set<string>>();
  const add = (receiver: string | undefined, method: string): void => {
    if (receiver === undefined) return;
    if (!called.has(receiver)) called.set(receiver, new Set());
    called.get(receiver)!.add(method);
  };
  for (const [fileName, text] of sources) {
    const source = parse(fileName, text);
    // `const f = r.m` (or `r['m']`), for calls of `f` found below.
    const aliases = new Map<string, ts.Expression>();
    const calledIds = new Set<string>();
    const visit = (node: ts.Node): void => {
      if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) aliases.set(node.name.text, bare(node.initializer));
      if (ts.isCallExpression(node)) {
        let callee = bare(node.expression);
        if (ts.isPropertyAccessExpression(callee) && ['call', 'apply'].includes(callee.name.text)) callee = bare(callee.expression);
        if (ts.isPropertyAccessExpression(callee)) add(receiverName(callee.expression), callee.name.text);
        else if (ts.isElementAccessExpression(callee)) for (const k of keysOf(callee.argumentExpression, source)) add(receiverName(callee.expression), k);
        else if (ts.isIdentifier(callee)) calledIds.add(callee.text);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    for (const id of calledIds) {
      const init = aliases.get(id);
      if (init && ts.isPropertyAccessExpression(init)) add(receiverName(init.expression), init.name.text);
      else if (init && ts.isElementAccessExpression(init)) for (const k of keysOf(init.argumentExpression, source)) add(receiverName(init.expression), k);
    }
  }
  return called;
}

/** The methods of `surface` in `methods` that `sources` never call on a receiver named as the model names it. */
export function uncalled(surface: Surface, methods: readonly string[], sources: ReadonlyMap<string, string>): string[] {
  const called = calledMethods(sources);
  const on = new Set(RECEIVERS[surface].flatMap((r) => [...(called.get(r) ?? [])]));
  return methods.filter((m) => !on.has(m));
}
