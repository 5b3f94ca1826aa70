#!/usr/bin/env node
/**
 * `npx datastore-locker-heartbeat cloud-run --name orders-sweep --location europe-west1 --url
 * https://… --service-account sweep@….iam.gserviceaccount.com`: prints the Cloud Scheduler job that
 * calls the sweep route every minute (the heartbeat of recurring work, and the sweep).
 * `npx datastore-locker-heartbeat app-engine > cron.yaml`: prints the App Engine `cron.yaml`.
 * `--path` names another route than `/sweep`. Exit code 2 and a usage line on stderr for bad input.
 */
import { cronYaml, schedulerJobCommand } from '../recurring/heartbeat';

const USAGE = [
  'usage: datastore-locker-heartbeat cloud-run --name JOB --location REGION --url https://SERVICE --service-account EMAIL [--path /sweep] [--attempt-deadline SECONDS]',
  '       datastore-locker-heartbeat app-engine [--path /sweep] > cron.yaml',
].join('\n');

function flags(args: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < args.length; i += 2) {
    const name = args[i]!;
    const value = args[i + 1];
    if (!name.startsWith('--') || value === undefined) throw new RangeError(`expected --flag value pairs; got ${JSON.stringify(args.slice(i).join(' '))}`);
    out.set(name.slice(2), value);
  }
  return out;
}

function main(argv: readonly string[]): string {
  const [target, ...rest] = argv;
  const f = flags(rest);
  const known = target === 'cloud-run' ? ['name', 'location', 'url', 'service-account', 'path', 'attempt-deadline'] : ['path'];
  for (const name of f.keys()) if (!known.includes(name)) throw new RangeError(`unknown flag --${name}`);
  if (target === 'app-engine') return cronYaml(f.get('path'));
  if (target !== 'cloud-run') throw new RangeError(`the first argument is cloud-run or app-engine; got ${JSON.stringify(target ?? '')}`);
  const need = (name: string): string => {
    const value = f.get(name);
    if (value === undefined) throw new RangeError(`--${name} is required`);
    return value;
  };
  const deadline = f.get('attempt-deadline');
  return schedulerJobCommand({
    name: need('name'), location: need('location'), url: need('url'), serviceAccount: need('service-account'),
    ...(f.has('path') && { path: f.get('path')! }), ...(deadline !== undefined && { attemptDeadlineS: Number(deadline) }),
  });
}

try {
  process.stdout.write(main(process.argv.slice(2)));
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${USAGE}\n`);
  process.exitCode = 2;
}
