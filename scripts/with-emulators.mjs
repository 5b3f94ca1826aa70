// `node scripts/with-emulators.mjs -- command args...`: starts both Datastore emulators, runs the
// command with DATASTORE_EMULATOR_HOST, LOCKER_FIRESTORE_EMULATOR_HOST, DATASTORE_PROJECT_ID and
// METADATA_SERVER_DETECTION set, stops the emulators and exits with the command's code.
import { runWithEmulators } from './emulators.mjs';

const argv = process.argv.slice(2);
const [command, ...args] = argv[0] === '--' ? argv.slice(1) : argv;

if (!command) {
  console.error('usage: node scripts/with-emulators.mjs -- command [args...]');
  process.exitCode = 2;
} else {
  runWithEmulators(command, args).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      console.error(err instanceof Error ? err.message : err);
      process.exitCode = 1;
    },
  );
}
