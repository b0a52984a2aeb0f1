import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/policy/duration.js';

describe('parseDuration', () => {
  it.each([
    ['90s', 90_000],
    ['30m', 30 * 60_000],
    ['1h30m', 90 * 60_000],
    ['168h', 7 * 24 * 3_600_000],
    ['1h0m5s', 3_605_000],
    ['0s', 0],
  ])('%s is %d ms', (s, ms) => {
    expect(parseDuration(s)).toBe(ms);
  });

  it.each(['', '1d', '1.5h', '-1h', '1h ', 'h', '1234567s', '1ms', '5'])('rejects %j and names it', (s) => {
    expect(() => parseDuration(s)).toThrow(`invalid duration ${JSON.stringify(s)}`);
  });
});
