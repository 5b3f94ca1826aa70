/**
 * The Datastore composite indexes `locker.inspect()` and the status router need, written as
 * `index.yaml` entries for the kinds a user names (the sweep needs none: it reads the ledger
 * through the built-in index of `due`). Queries with equality filters only (a count of a state, a
 * count of a state within one run, a search by `lock_chain`) need none either: Datastore serves
 * them by merging its built-in single-property indexes. A range or an order on `lock_ts` after
 * equalities does need one: (`lock_state`, `lock_ts`) for a state's list and its ranges, and
 * (`lock_run`, `lock_state`, `lock_ts`) for one run's (a kickoff's, a fan-out's).
 */

/** A kind Datastore accepts in `index.yaml`: not empty, not a reserved `__` kind, on one line. */
const KIND = /^(?!__)[^\r\n]+$/;

/** The equality properties before `lock_ts` in each index: a state's steps, and a run's. */
const INDEX_PREFIXES: ReadonlyArray<readonly string[]> = [['lock_state'], ['lock_run', 'lock_state']];

/** One `index.yaml` entry: the kind, its properties, the last one descending when asked. */
function entry(kind: string, properties: readonly string[], lastDescending: boolean): string[] {
  const lines = [`- kind: ${JSON.stringify(kind)}`, '  properties:', ...properties.map((name) => `  - name: ${name}`)];
  if (lastDescending) lines.push('    direction: desc');
  return lines;
}

/**
 * The `index.yaml` text for your lockable kinds: for each, four entries: `lock_state` then
 * `lock_ts`, ascending and descending (the two orders a list of steps by state is read in), and
 * the same after `lock_run` (a run's steps by state, and their counts within a range of `lock_ts`).
 * Deploy it with `gcloud datastore indexes create index.yaml`. Also a command:
 * `npx datastore-locker-indexes Order Invoice > index.yaml`.
 * Throws a `TypeError` when no kind is given or a kind is not a valid kind name.
 */
export function indexYaml(kinds: readonly string[]): string {
  if (!Array.isArray(kinds) || kinds.length === 0) throw new TypeError('indexYaml: name at least one kind');
  for (const kind of kinds) {
    if (typeof kind !== 'string' || !KIND.test(kind)) throw new TypeError(`indexYaml: ${JSON.stringify(kind)} is not a kind name`);
  }
  const lines = [
    '# Composite indexes datastore-locker needs to list and count steps by state (locker.inspect(),',
    '# the status router): four for each lockable kind, two of them for the steps of one run (a',
    '# kickoff, a fan-out). The sweep needs none. Deploy with',
    '#   gcloud datastore indexes create index.yaml',
    'indexes:',
  ];
  for (const kind of new Set(kinds)) {
    for (const prefix of INDEX_PREFIXES) {
      for (const desc of [false, true]) lines.push('', ...entry(kind, [...prefix, 'lock_ts'], desc));
    }
  }
  return `${lines.join('\n')}\n`;
}
