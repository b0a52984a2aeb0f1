const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1_000 } as const;
const WHOLE = /^([0-9]{1,6}(h|m|s))+$/;
const PART = /([0-9]{1,6})(h|m|s)/g;

/**
 * Milliseconds of a Go-style duration in the subset the CRD schema admits (`Duration` in
 * @kpromo/api): whole numbers of h, m and s, e.g. 90s, 30m, 1h30m, 168h. Anything else throws, so
 * an object that bypassed validation cannot slip through as 0.
 */
export function parseDuration(s: string): number {
  if (typeof s !== 'string' || !WHOLE.test(s)) {
    throw new Error(`invalid duration ${JSON.stringify(s)}: expected whole h/m/s units such as 90s, 30m or 1h30m`);
  }
  let ms = 0;
  for (const [, n, unit] of s.matchAll(PART)) ms += Number(n) * UNIT_MS[unit as keyof typeof UNIT_MS];
  return ms;
}
