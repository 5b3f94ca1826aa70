/**
 * Times as an operator reads them on the status page: ages, short and exact enough ("4 min 10 s",
 * "2 h 5 min", "3 d 4 h"): the two largest units.
 */

/** An age in words, e.g. `850 ms`, `12 s`, `4 min 10 s`, `2 h 5 min`, `3 d 4 h`; `—` when unknown. */
export function formatAge(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  const units: Array<[string, number]> = [['d', 86_400], ['h', 3_600], ['min', 60], ['s', 1]];
  let rest = Math.floor(ms / 1_000);
  const parts: string[] = [];
  for (const [name, size] of units) {
    const count = Math.floor(rest / size);
    rest -= count * size;
    if (count > 0 || parts.length > 0) parts.push(`${count} ${name}`);
    if (parts.length === 2) break;
  }
  return parts.filter((p) => !p.startsWith('0 ')).join(' ') || '0 s';
}
