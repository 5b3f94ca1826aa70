/**
 * How big the slowest tests run. `npm test` runs their short versions: one kill point per
 * emulator, drawn at random and named in the test's title (as the kill tests draw the call they
 * die before), and hundreds of chains instead of thousands. `npm run test:long`, which CI runs
 * after `npm test`, runs only the test files that import this module (scripts/test.mjs --long
 * finds them by that import), at full size: every kill point, thousands of chains.
 */
export const LONG = process.env.LOCKER_TEST_LONG === '1';

/** `short` in `npm test`, `long` in `npm run test:long`. */
export function scaled<T>(short: T, long: T): T {
  return LONG ? long : short;
}

/** One of `points`, drawn at random. */
export function onePoint<T>(points: readonly T[]): T[] {
  return [points[Math.floor(Math.random() * points.length)]!];
}

/** Every point in `npm run test:long`; one of them, at random, in `npm test`. */
export function pointsToRun<T>(points: readonly T[]): T[] {
  return LONG ? [...points] : onePoint(points);
}
