/**
 * `npm run model`: runs the model-based test of the four promises (see
 * docs/concepts/model-based-test.md) and prints the seed, the sequences and operations run, the
 * wall time, and, on a counterexample, the shrunk sequence. Exits 1 when a promise broke.
 *
 *   npm run model -- --seed 42 --runs 2000 --store memory
 *   npm run model -- --known                          (replays the known defects' sequences)
 *   npm run model -- --seed 3 --runs 500 --no-shrink  (stops at the first counterexample: npm run model:mutants counts)
 *   npm run model -- --without refusal,email          (look past the counterexamples those find)
 *   npm run model -- --ignore 'failed for good on its first run'   (look past a rule's known counterexample)
 *   npm run model:datastore -- --runs 30             (on the legacy emulator, started for the run)
 *   npm run model:native -- --runs 30                (on the Firestore emulator in Native mode, started for the run)
 */
import { parseArgs } from 'node:util';
import { FEATURES, type Feature } from './commands';
import { describeFailure, replayKnown, runModel, STORE_KINDS, type StoreKind } from './run';
import { PROMISES } from './oracle';

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      seed: { type: 'string' },
      runs: { type: 'string', default: '200' },
      store: { type: 'string', default: 'memory' },
      'max-commands': { type: 'string', default: '40' },
      path: { type: 'string' },
      'replay-path': { type: 'string' },
      without: { type: 'string', default: '' },
      ignore: { type: 'string', multiple: true, default: [] },
      known: { type: 'boolean', default: false },
      'no-shrink': { type: 'boolean', default: false },
    },
  });
  const seed = values.seed === undefined ? Date.now() % 2_147_483_647 : Number(values.seed);
  const runs = Number(values.runs);
  const maxCommands = Number(values['max-commands']);
  const store = values.store as StoreKind;
  if (!Number.isSafeInteger(seed) || !Number.isSafeInteger(runs) || runs < 1 || !Number.isSafeInteger(maxCommands) || maxCommands < 1) {
    console.error(`usage: npm run model -- [--seed N] [--runs N] [--store ${STORE_KINDS.join('|')}] [--max-commands N] [--path P --replay-path R] [--without F,...] [--ignore TEXT]... [--known] [--no-shrink]`);
    return 2;
  }
  if (!STORE_KINDS.includes(store)) {
    console.error(`--store must be one of ${STORE_KINDS.join(', ')}; got ${JSON.stringify(store)}`);
    return 2;
  }
  if (values.known) {
    let unexpected = 0;
    for (const { defect, violations } of await replayKnown(store)) {
      const broke = violations.some((v) => v.promise === defect.promise);
      const expected = defect.fixed ? violations.length === 0 : broke;
      if (!expected) unexpected++;
      console.log(`${expected ? 'as expected' : 'UNEXPECTED'}: defect ${defect.id}, ${defect.title} (${defect.fixed ? 'fixed: every promise holds' : `breaks (${defect.promise}) ${PROMISES[defect.promise]}`})`);
      for (const v of violations) console.log(`    (${v.promise}) ${v.text}`);
    }
    return unexpected === 0 ? 0 : 1;
  }
  const without = values.without.split(',').filter((f) => f !== '');
  const unknown = without.filter((f) => !(FEATURES as readonly string[]).includes(f));
  if (unknown.length > 0) {
    console.error(`--without takes ${FEATURES.join(', ')}; got ${unknown.join(', ')}`);
    return 2;
  }
  console.log(`model: seed ${seed}, up to ${runs} sequences of up to ${maxCommands} commands, on the ${store} store${without.length > 0 ? `, without ${without.join(', ')}` : ''}${values.ignore.length > 0 ? `, not counting ${values.ignore.map((t) => JSON.stringify(t)).join(', ')}` : ''}`);
  const result = await runModel({ seed, runs, store, maxCommands, without: without as Feature[], ignore: values.ignore, ...(values.path ? { path: values.path } : {}), ...(values['replay-path'] ? { replayPath: values['replay-path'] } : {}), shrink: !values['no-shrink'] });
  console.log(`model: ${result.sequences} sequences (${result.generated} generated, the rest shrinking), ${result.operations} operations, ${(result.wallMs / 1000).toFixed(1)} s wall time, seed ${result.seed}`);
  if (result.failure) {
    if (result.first) console.log(`model: first counterexample at sequence ${result.first.sequence}, after ${result.first.operations} operations and ${(result.first.wallMs / 1000).toFixed(1)} s`);
    console.log(describeFailure(result));
    console.log(JSON.stringify({ ...result, failure: { ...result.failure } }));
    return 1;
  }
  console.log('model: every promise held: (a) every committed step ran to an end; (b) every effect once, or each extra run named by an alert; (c) every alert claimed reached the alerter, each id stable; (d) no kickoffId started two chains on one entity; (f) fan-out: each join once, after its children, shown each child once as it ended; (r) recurring work: one chain per (schedule, time), none the policies rule out, none missed, run-now once per id; (s) no forged request ran a handler');
  console.log(JSON.stringify(result));
  return 0;
}

main().then((code) => { process.exitCode = code; }, (error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
