#!/usr/bin/env node
/**
 * `npx datastore-locker-indexes Order Invoice > index.yaml`: prints the `index.yaml` entries
 * `locker.inspect()` and the status router need for the kinds named. Exit code 2 and a line on
 * stderr when no kind, or a bad one, is given.
 */
import { indexYaml } from '../store/index-yaml';

const kinds = process.argv.slice(2);
try {
  process.stdout.write(indexYaml(kinds));
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\nusage: datastore-locker-indexes KIND [KIND ...] > index.yaml\n`);
  process.exitCode = 2;
}
