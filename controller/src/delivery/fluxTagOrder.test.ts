import { describe, expect, it } from 'vitest';
import { compareSemver, parseSemver, tagOrder } from './fluxTagOrder.js';

const prefer = (o: ReturnType<typeof tagOrder>, a: string, b: string) => {
  if (!('prefer' in o)) throw new Error(`order unknown: ${o.unknown}`);
  return Math.sign(o.prefer(a, b));
};

describe('tagOrder', () => {
  // kpromo's default tagTemplate is {version}-{timestamp}: a semver prerelease ranked by its timestamp.
  it('semver ranks like Masterminds semver, prereleases below releases and by identifier', () => {
    const o = tagOrder({ semver: { range: '>=1.0.0-0' } }, undefined);
    expect(prefer(o, 'v1.2.0-20260102T000000Z', 'v1.2.0-20260101T235959Z')).toBe(1);
    expect(prefer(o, 'v1.3.0-20250101T000000Z', 'v1.2.0-20260101T000000Z')).toBe(1);
    expect(prefer(o, '1.2.0', 'v1.2.0-20260101T000000Z')).toBe(1);
    expect(prefer(o, '1.2.0-rc.10', '1.2.0-rc.9')).toBe(1); // numeric identifiers numerically
    expect(prefer(o, '1.2.0-rc.1', '1.2.0-1')).toBe(1); // alphanumeric above numeric
    expect(prefer(o, '1.2.0-rc.1.1', '1.2.0-rc.1')).toBe(1); // more identifiers above a prefix
    expect(prefer(o, 'v1.2', '1.2.0+build.5')).toBe(0); // lenient: missing patch, metadata ignored
    expect('rank' in o && o.rank('v1.2.0-20260101T000000Z')).toBe('ranked');
    expect('rank' in o && o.rank('20260101T000000Z-v1.2.0')).toBe('never');
  });

  it('alphabetical and numerical select the highest in asc (the default) and the lowest in desc', () => {
    expect(prefer(tagOrder({ alphabetical: {} }, undefined), '20260102-a', '20260101-b')).toBe(1);
    expect(prefer(tagOrder({ alphabetical: { order: 'desc' } }, undefined), '20260102-a', '20260101-b')).toBe(-1);
    expect(prefer(tagOrder({ numerical: { order: 'asc' } }, undefined), '10', '9')).toBe(1);
    expect(prefer(tagOrder({ numerical: { order: 'desc' } }, undefined), '10', '9.5')).toBe(-1);
    expect(prefer(tagOrder({ numerical: {} }, undefined), 'abc', '9')).toBe(0);
  });

  it('does not guess when the policy ranks extracted values or names no known ordering', () => {
    expect(tagOrder({ alphabetical: {} }, '$ts')).toEqual({ unknown: expect.stringMatching(/filterTags\.extract/) });
    expect(tagOrder({}, undefined)).toEqual({ unknown: expect.stringMatching(/no ordering kpromo knows/) });
    expect(tagOrder(undefined, undefined)).toHaveProperty('unknown');
  });
});

describe('parseSemver / compareSemver', () => {
  it('parses the lenient grammar and refuses what semver does not allow', () => {
    expect(parseSemver('v1')).toEqual({ core: [1n, 0n, 0n], pre: '' });
    expect(parseSemver('1.2.3-a.b')).toEqual({ core: [1n, 2n, 3n], pre: 'a.b' });
    for (const bad of ['latest', '1.2.3.4', 'v1.2.3-', '1..2', 'main-abc123'])
      expect(parseSemver(bad), bad).toBeUndefined();
  });

  it('orders huge numbers exactly', () => {
    const a = parseSemver('1.0.0-18446744073709551616')!;
    const b = parseSemver('1.0.0-18446744073709551615')!;
    expect(compareSemver(a, b)).toBe(1);
  });
});
