/**
 * The TypeScript blocks of the documentation (README.md and every page under docs/, the generated
 * docs/api aside), found once for the tests that type-check and run them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The repository's root. */
export const ROOT = join(__dirname, '..', '..');

/** One fenced block of a page. */
export interface DocBlock {
  /** The page, as a repository path. */
  page: string;
  /** Its place among the page's blocks of the same language, from 0. */
  index: number;
  /** The line of the opening fence, from 1. */
  line: number;
  /** The block's text. */
  code: string;
}

/** README.md and every Markdown page under docs/ (the generated docs/api aside), as repository paths. */
export function docPages(): string[] {
  const under = (folder: string): string[] => readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((e) => {
    const path = `${folder}/${e.name}`;
    if (e.isDirectory()) return path === 'docs/api' ? [] : under(path);
    return e.name.endsWith('.md') ? [path] : [];
  });
  return ['README.md', ...under('docs')];
}

/** The blocks of `page` fenced with ```lang. */
export function docBlocks(page: string, lang: string): DocBlock[] {
  const text = readFileSync(join(ROOT, page), 'utf8');
  const fence = new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g');
  return [...text.matchAll(fence)].map((m, index) => ({ page, index, line: text.slice(0, m.index).split('\n').length, code: m[1]! }));
}
