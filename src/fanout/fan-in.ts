/**
 * `ctx.fanIn()`: what the join step reads. The header (outcome and counts, as the join was
 * decided) and the children a page record at a time, read by key: results travel through storage,
 * never in a task.
 */
import type { Key } from '@google-cloud/datastore';
import type { Json } from '../types';
import { getHeader, pageChildren, type FanParts } from './read-children';
import { fanOutId, type ChildState } from './records';
import type { FanIn, FanInChild, FanInPage } from './types';

/** The fan-out whose join is step `seq` of `chain` on `key`; undefined when that step is no join (or the fan-out was cancelled without one). */
export async function fanIn(parts: FanParts, key: Key, chain: string | undefined, seq: number): Promise<FanIn | undefined> {
  if (chain === undefined || seq < 2) return undefined;
  const header = await getHeader(parts, fanOutId(key, chain, seq - 1), key.namespace);
  if (!header || (header.state !== 'joining' && header.state !== 'cancelled') || !header.counts || !header.outcome) return undefined;
  const pages = header.pages;
  return {
    id: header.id,
    outcome: header.outcome as FanIn['outcome'],
    counts: header.counts,
    async children(options: { cursor?: string; state?: ChildState } = {}): Promise<FanInPage> {
      const n = options.cursor === undefined ? 0 : Number(options.cursor);
      if (!Number.isSafeInteger(n) || n < 0) throw new RangeError('fanIn().children(): the cursor is not one it handed out');
      if (n >= pages) return { children: [] };
      const records = await pageChildren(parts, header.id, n, key.namespace);
      const children: FanInChild[] = [];
      for (const r of records) {
        if (options.state !== undefined && r.state !== options.state) continue;
        const child: FanInChild = { key: r.key, state: r.state };
        if (r.error !== undefined) child.error = r.error;
        if (r.result !== undefined) child.result = JSON.parse(r.result) as Json;
        children.push(child);
      }
      const page: FanInPage = { children };
      if (n + 1 < pages) page.cursor = String(n + 1);
      return page;
    },
  };
}
