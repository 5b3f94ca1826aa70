/**
 * `npm run fuzz [-- --requests N --seed S --emulator datastore|firestore]`: starts the emulator,
 * runs the fuzz (default 100,000 requests), prints a table and one JSON line, last; exits 1 when
 * a rule broke.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Datastore } from '@google-cloud/datastore';
import { runFuzz, type FuzzReport } from './fuzz';
import { freshSeed } from './random';

interface Emulators {
  datastore?: { host: string };
  firestore?: { host: string };
  stop(): Promise<void>;
}

/** Whether a report breaks a rule. */
export function fuzzBroken(r: FuzzReport): boolean {
  return r.unexpectedCount > 0 || r.unanswered > 0 || r.handlerRuns > 0 || r.uncaughtErrors > 0 || r.store.writes > 0;
}

async function main(): Promise<number> {
  process.env.METADATA_SERVER_DETECTION = 'none';
  const flags = new Map<string, string>();
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) flags.set(argv[i]!.replace(/^--/, ''), argv[i + 1] ?? '');
  const requests = Number(flags.get('requests') ?? 100_000);
  const seed = Number(flags.get('seed') ?? freshSeed());
  const emulator = flags.get('emulator') === 'firestore' ? 'firestore' : 'datastore';
  const module = (await import(pathToFileURL(join(__dirname, '..', 'scripts', 'emulators.mjs')).href)) as { startEmulators(names: string[]): Promise<Emulators> };
  const emulators = await module.startEmulators([emulator]);
  try {
    const datastore = new Datastore({ projectId: 'locker-fuzz', apiEndpoint: emulators[emulator]!.host });
    const r = await runFuzz(datastore, `fuzz-${seed}`, seed, requests);
    console.log([
      'Fuzz of handle()',
      `  seed ${r.seed}; ${emulator} emulator`,
      `  requests ${r.requests} (authentication on ${r.withAuth}, off ${r.withoutAuth}) in ${Math.round(r.wallMs / 1000)} s`,
      `  answers ${Object.entries(r.statuses).sort().map(([s, n]) => `${s}: ${n}`).join(', ')}`,
      `  unexpected answers ${r.unexpectedCount}; unanswered ${r.unanswered}; handler runs ${r.handlerRuns}; uncaught errors ${r.uncaughtErrors}`,
      `  store reads ${r.store.reads}, transactions ${r.store.transactions}, writes ${r.store.writes}`,
      `  heap ${mb(r.heapBeforeBytes)} → ${mb(r.heapAfterBytes)} MiB (${r.heapGrowthBytes >= 0 ? '+' : ''}${mb(r.heapGrowthBytes)})`,
      ...r.unexpected.map((u) => `  ! ${u}`),
    ].join('\n'));
    const { unexpected, statuses, store, ...figures } = r;
    console.log(JSON.stringify({ ...figures, statuses, storeReads: store.reads, storeWrites: store.writes, unexpected: unexpected.length }));
    return fuzzBroken(r) ? 1 : 0;
  } finally {
    await emulators.stop();
  }
}

function mb(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
