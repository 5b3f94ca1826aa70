/**
 * The library under measurement, as it ships: the package's entry point `dist/index.js`, compiled
 * by tsc (`npm run bench` builds it first), typed by its sources. Loading the sources through tsx
 * instead would measure esbuild's transform of them, which wraps every closure a step makes in a
 * `__name()` call (a defineProperty each): about 30 µs a step that no user of the package pays.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type * as Library from '../src/index';

const ENTRY = join(__dirname, '..', 'dist', 'index.js');
if (!existsSync(ENTRY)) throw new Error(`${ENTRY} is missing: run \`npm run build\` first (\`npm run bench\` does)`);

// eslint-disable-next-line @typescript-eslint/no-require-imports
const library = require(ENTRY) as typeof Library;

export const { Locker, DatastoreStore, MemoryStore, LocalQueue } = library;
export type Locker = Library.Locker;
export type DatastoreStore = Library.DatastoreStore;
export type MemoryStore = Library.MemoryStore;
export type LocalQueue = Library.LocalQueue;
