// indexYaml() and the datastore-locker-indexes command: the index.yaml entries locker.inspect()
// and the status router need, for the kinds a user names. The YAML is read back by a parser of
// this test's own (the few shapes it uses) and checked entry by entry; the repository's own
// index.yaml (the example app's) is the command's output for its kinds.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { indexYaml } from '../../src/index';

const root = join(__dirname, '..', '..');

interface Index { kind: string; properties: Array<{ name: string; direction?: string }> }

/** Reads the `indexes:` list the way `gcloud datastore indexes create` would see it. */
function parse(yaml: string): Index[] {
  const indexes: Index[] = [];
  for (const line of yaml.split('\n')) {
    if (line.startsWith('#') || line.trim() === '' || line === 'indexes:' || line === '  properties:') continue;
    const kind = /^- kind: (.+)$/.exec(line);
    const name = /^ {2}- name: (\w+)$/.exec(line);
    const direction = /^ {4}direction: (asc|desc)$/.exec(line);
    if (kind) indexes.push({ kind: JSON.parse(kind[1]!) as string, properties: [] });
    else if (name) indexes.at(-1)!.properties.push({ name: name[1]! });
    else if (direction) indexes.at(-1)!.properties.at(-1)!.direction = direction[1]!;
    else assert.fail(`a line the index file should not have: ${JSON.stringify(line)}`);
  }
  return indexes;
}

const both = (kind: string): Index[] => [
  { kind, properties: [{ name: 'lock_state' }, { name: 'lock_ts' }] },
  { kind, properties: [{ name: 'lock_state' }, { name: 'lock_ts', direction: 'desc' }] },
  { kind, properties: [{ name: 'lock_run' }, { name: 'lock_state' }, { name: 'lock_ts' }] },
  { kind, properties: [{ name: 'lock_run' }, { name: 'lock_state' }, { name: 'lock_ts', direction: 'desc' }] },
];

describe('indexYaml()', () => {
  it('lists lock_state then lock_ts, ascending and descending, and the same after lock_run, for each kind named, once each', () => {
    assert.deepEqual(parse(indexYaml(['Order', 'Invoice', 'Order'])), [...both('Order'), ...both('Invoice')]);
  });
  it('quotes kinds that YAML would misread', () => {
    assert.deepEqual(parse(indexYaml(['Big: kind', '#1'])), [...both('Big: kind'), ...both('#1')]);
  });
  it('refuses no kind, an empty one, a reserved one, one across lines', () => {
    for (const kinds of [[], [''], ['__kind__'], ['a\nb']]) assert.throws(() => indexYaml(kinds), TypeError, JSON.stringify(kinds));
  });
  it('is what the repository\'s index.yaml holds for the example app\'s kinds', () => {
    const file = readFileSync(join(root, 'index.yaml'), 'utf8');
    assert.ok(file.endsWith(indexYaml(['Counter', 'Order'])), 'index.yaml is the command\'s output');
    assert.deepEqual(parse(file), [...both('Counter'), ...both('Order')]);
  });
});

describe('the datastore-locker-indexes command (package.json bin)', () => {
  const bin = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin['datastore-locker-indexes'];
  const run = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => new Promise((resolve) => {
    execFile(process.execPath, [join(root, bin!), ...args], { cwd: root }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr }));
  });
  it('is built (npm test builds dist/ first) and prints the entries for the kinds named', async () => {
    assert.ok(bin, 'package.json names the command');
    const { code, stdout } = await run(['Order', 'Invoice']);
    assert.equal(code, 0);
    assert.equal(stdout, indexYaml(['Order', 'Invoice']));
  });
  it('exits 2 with a usage line when no kind is named', async () => {
    const { code, stdout, stderr } = await run([]);
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.match(stderr, /usage: datastore-locker-indexes KIND/);
  });
});
