// Writes dist/index.mjs and dist/firestore.mjs: ES modules that re-export the CommonJS build by
// name, so `import` and `require` share one copy of every class (no dual-package hazard for
// `instanceof` checks). One per entry of package.json's exports map.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
for (const entry of ['index', 'firestore']) {
  const cjs = require(`../dist/${entry}.js`);
  const names = Object.keys(cjs).filter((n) => n !== 'default' && n !== '__esModule').sort();
  const body = [
    `import cjs from './${entry}.js';`,
    ...names.map((n) => `export const ${n} = cjs.${n};`),
    '',
  ].join('\n');
  writeFileSync(new URL(`../dist/${entry}.mjs`, import.meta.url), body);
}
