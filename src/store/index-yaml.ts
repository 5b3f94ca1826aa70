/**
 * The Datastore composite indexes `locker.inspect()` and the status router need, written as
 * `index.yaml` entries for the kinds a user names (the sweep needs none: it reads the ledger
 * through the built-in index of `due`).
 */

/** A kind Datastore accepts in `index.yaml`: not empty, not a reserved `__` kind, on one line. */
const KIND = /^(?!__)[^\r\n]+$/;

/**
 * The `index.yaml` text for your lockable kinds: for each, `lock_state` then `lock_ts` ascending
 * and descending (the two orders a list of steps by state is read in), and `lock_run`,
 * `lock_state`, `lock_ts` (the lists of one kickoff's or fan-out's chains by state). Deploy it with
 * `gcloud datastore indexes create index.yaml`. Also a command:
 * `npx datastore-locker-indexes Order Invoice > index.yaml`.
 * Throws a `TypeError` when no kind is given or a kind is not a valid kind name.
 */
export function indexYaml(kinds: readonly string[]): string {
  if (!Array.isArray(kinds) || kinds.length === 0) throw new TypeError('indexYaml: name at least one kind');
  for (const kind of kinds) {
    if (typeof kind !== 'string' || !KIND.test(kind)) throw new TypeError(`indexYaml: ${JSON.stringify(kind)} is not a kind name`);
  }
  const lines = [
    '# Composite indexes datastore-locker needs to list steps by state (locker.inspect(), the status',
    '# router): three for each lockable kind. The sweep needs none. Deploy with',
    '#   gcloud datastore indexes create index.yaml',
    'indexes:',
  ];
  for (const kind of new Set(kinds)) {
    const name = JSON.stringify(kind);
    lines.push('', `- kind: ${name}`, '  properties:', '  - name: lock_state', '  - name: lock_ts');
    lines.push('', `- kind: ${name}`, '  properties:', '  - name: lock_state', '  - name: lock_ts', '    direction: desc');
    lines.push('', `- kind: ${name}`, '  properties:', '  - name: lock_run', '  - name: lock_state', '  - name: lock_ts');
  }
  return `${lines.join('\n')}\n`;
}
