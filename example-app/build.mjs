// Bundles the example app into one JavaScript file for App Engine: `npm run gcp-build`, which App
// Engine runs at deploy time, and `node example-app/build.mjs [outfile]` by hand.
//
// Why a bundle: App Engine installs devDependencies only for the build step, then reinstalls the
// production packages alone. The example runs on tsx and Express, which this package lists
// as devDependencies (Express is the library's peer), so neither exists when the app starts.
// esbuild (installed with tsx) compiles the TypeScript and bundles Express and the library's
// source in; the packages a production install keeps stay external and are loaded from
// node_modules: the `dependencies`, and the peer dependencies that are not also devDependencies
// (npm installs a package's own peers, also with --omit=dev: here the Google Cloud clients).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));
const outfile = process.argv[2] ?? `${root}example-app/dist/main.js`;
const dev = new Set(Object.keys(pkg.devDependencies ?? {}));
const production = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {}).filter((name) => !dev.has(name))];

await build({
  entryPoints: [`${root}example-app/main.ts`],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  external: production,
  sourcemap: true,
  logLevel: 'warning',
});
console.log(`example app bundled into ${outfile}`);
