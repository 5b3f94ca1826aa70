/**
 * `npm run chaos [-- --name value ...]`: starts the chosen emulator (`--emulator datastore`, the
 * default, `firestore` in Datastore mode, or `firestoreNative`, the same emulator in Native mode,
 * where the run's store is `FirestoreStore`: chaos/chain-store.ts) with scripts/emulators.mjs,
 * runs the chaos run on it, prints a table and one JSON line, last, and exits 1 when an invariant
 * broke (2 on a bad flag). Flags are the fields of `ChaosOptions` in kebab-case: `--seed 7 --chains 200 --steps 5 --kill-every-ms 0`;
 * `--freeze-idle --sigterm` runs the workers as Cloud Run does; `--help` lists every flag.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chaosOptions, helpText, parseFlags, type ChaosOptions } from './options';
import { summary, table } from './report';
import { runChaos } from './run';

interface Emulators {
  datastore?: { host: string };
  firestore?: { host: string };
  firestoreNative?: { host: string };
  stop(): Promise<void>;
}

async function main(): Promise<number> {
  process.env.METADATA_SERVER_DETECTION = 'none'; // no Google client here looks for a metadata server (workers inherit it)
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log(helpText());
    return 0;
  }
  let options: ChaosOptions;
  try {
    options = chaosOptions(parseFlags(process.argv.slice(2)));
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return 2;
  }
  const module = (await import(pathToFileURL(join(__dirname, '..', 'scripts', 'emulators.mjs')).href)) as { startEmulators(names: string[]): Promise<Emulators> };
  process.stderr.write(`chaos: starting the ${options.emulator} emulator (seed ${options.seed})\n`);
  const emulators = await module.startEmulators([options.emulator]);
  try {
    const host = emulators[options.emulator]!.host;
    const result = await runChaos(options, host, (line) => process.stderr.write(`chaos: ${line}\n`));
    console.log(table(result));
    console.log(JSON.stringify(summary(result)));
    return result.verdict.violations.length > 0 ? 1 : 0;
  } finally {
    await emulators.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
