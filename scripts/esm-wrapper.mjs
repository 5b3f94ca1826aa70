// Writes dist/index.mjs: an ES module that re-exports the CommonJS build by name, so `import` and
// `require` share one copy of every class (no dual-package hazard for `instanceof` checks).
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const cjs = require('../dist/index.js');
const names = Object.keys(cjs).filter((n) => n !== 'default' && n !== '__esModule').sort();
const body = [
  "import cjs from './index.js';",
  ...names.map((n) => `export const ${n} = cjs.${n};`),
  '',
].join('\n');
writeFileSync(new URL('../dist/index.mjs', import.meta.url), body);
