import type { EnvironmentVersion } from '@kpromo/api';
import { compileTagPattern, globMatcher, MAX_MATCH_INPUT, tagPatternProblem } from '@kpromo/contract';
import { app, dg, flow } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import {
  computeCandidates,
  DEFAULT_TAG_PATTERN,
  InputError,
  matchesSelector,
  PatternError,
} from './computeCandidates.js';

const running =
  (tag: string) =>
  (_a: unknown, e: string): EnvironmentVersion | undefined =>
    e === 'dev' ? { environment: 'dev', tag, digest: dg('a'), health: 'Healthy' } : undefined;

describe('tag patterns (RE2, linear time)', () => {
  it('does not stall on a catastrophic pattern: ^(a+)+$ against a long tag is no match', () => {
    const evil = '^(a+)+$';
    const long = `${'a'.repeat(5000)}!`;
    expect(compileTagPattern(evil).test(long)).toBe(false);
    const r = computeCandidates(
      flow(['dev', 'stable'], { tagPattern: evil }),
      [app('cart')],
      running(long),
      'dev',
      'stable',
    );
    expect(r.candidates).toEqual([]);
    expect(r.skipped.map((s) => s.reason)).toEqual(['TagPatternMismatch']);
    // Below the input bound too, where the engine itself does the work: a backtracking RegExp needs
    // ~2^200 steps for this one, RE2 one pass.
    const under = `${'a'.repeat(MAX_MATCH_INPUT - 1)}!`;
    expect(compileTagPattern(evil).test(under)).toBe(false);
    expect(compileTagPattern(evil).test('a'.repeat(MAX_MATCH_INPUT))).toBe(true);
    expect(compileTagPattern('(x+x+)+y').test('x'.repeat(MAX_MATCH_INPUT))).toBe(false);
  });

  it('refuses backreferences and lookaround with a message naming the field', () => {
    expect(() => compileTagPattern('^(a)\\1$')).toThrow(
      'tagPattern: invalid regular expression (RE2 syntax): error parsing regexp: invalid escape sequence: `\\1`',
    );
    expect(() => compileTagPattern('^v(?=\\d)')).toThrow(/^tagPattern: invalid regular expression \(RE2 syntax\): /);
    expect(() => compileTagPattern('(?<!x)v')).toThrow(PatternError);
    expect(tagPatternProblem('([')).toMatch(/^tagPattern: invalid regular expression \(RE2 syntax\): .*missing/);
    expect(tagPatternProblem('^v1')).toBeUndefined();
    // Through computeCandidates: the API filter and the flow's own pattern, both named.
    const f = flow(['dev', 'stable']);
    expect(() =>
      computeCandidates(f, [app('cart')], running('v1.0.0'), 'dev', 'stable', { tagPattern: '(a)\\1' }),
    ).toThrow(/^tagPattern: invalid regular expression \(RE2 syntax\)/);
    expect(() =>
      computeCandidates(
        flow(['dev', 'stable'], { tagPattern: '(?=v)' }),
        [app('cart')],
        running('v1'),
        'dev',
        'stable',
      ),
    ).toThrow(/^PromotionFlow main: tagPattern: invalid regular expression \(RE2 syntax\)/);
  });

  it('bounds pattern length and complexity', () => {
    expect(() => compileTagPattern('a'.repeat(257))).toThrow(
      'tagPattern: regular expression is 257 characters long, limit 256',
    );
    expect(() => compileTagPattern('[\\s\\S]{1000}'.repeat(8))).toThrow(
      /tagPattern: regular expression is too complex/,
    );
    expect(() => compileTagPattern(42 as unknown as string)).toThrow('tagPattern: must be a string');
  });

  it('keeps the default pattern and usual tag patterns working', () => {
    const d = compileTagPattern(DEFAULT_TAG_PATTERN);
    expect(['v1.2.3', 'v10.0.1-rc.1', 'v1.2.3+build'].map((t) => d.test(t))).toEqual([true, true, true]);
    expect(['1.2.3', 'v1.2', 'xv1.2.3', ''].map((t) => d.test(t))).toEqual([false, false, false, false]);
    expect(compileTagPattern('^release-[0-9]{4}$').test('release-2026')).toBe(true);
    expect(compileTagPattern('(?i)^V1').test('v1')).toBe(true);
    expect(compileTagPattern('^v(?P<major>\\d+)').test('v3')).toBe(true);
    expect(compileTagPattern('^v(?<major>\\d+)').test('v3')).toBe(true);
    // Compiled once: the same matcher comes back from the cache.
    expect(compileTagPattern('^v2')).toBe(compileTagPattern('^v2'));
  });
});

describe('globs (no RegExp, no backtracking)', () => {
  it('matches * and ? on the whole name', () => {
    const cases: Array<[string, string, boolean]> = [
      ['shop-*', 'shop-cart', true],
      ['shop-*', 'shop-', true],
      ['shop-*', 'xshop-cart', false],
      ['*-api', 'shop-api', true],
      ['*-api', 'shop-api-2', false],
      ['a?c', 'abc', true],
      ['a?c', 'ac', false],
      ['a*b*c', 'aXXbYYc', true],
      ['a*b*c', 'aXXcYYb', false],
      ['a*ab', 'aaab', true],
      ['*a*a*', 'aa', true],
      ['*a*a*', 'ba', false],
      ['a.b*', 'a.bc', true],
      ['a.b*', 'axbc', false],
      ['*', '', true],
      ['', '', true],
      ['', 'a', false],
      ['**', 'x', true],
      ['[ab]', 'a', false],
      ['[ab]', '[ab]', true],
    ];
    for (const [g, s, want] of cases) expect(globMatcher(g).test(s), `${g} ~ ${s}`).toBe(want);
  });

  it('stays fast on glob patterns that make backtracking matchers explode, and bounds the glob', () => {
    const g = `${'*a'.repeat(200)}*b`;
    expect(globMatcher(g).test('a'.repeat(1000))).toBe(false);
    expect(globMatcher(g).test(`${'a'.repeat(300)}b`)).toBe(true);
    expect(() => globMatcher('x'.repeat(513))).toThrow(/applications: glob is 513 characters long, limit 512/);
    expect(() => globMatcher(7)).toThrow('applications: a name or glob must be a string');
  });

  it('refuses selectors of the wrong shape with an InputError naming the field', () => {
    const a = app('cart');
    expect(() => matchesSelector(a, { applications: 'cart' as unknown as string[] })).toThrow(InputError);
    expect(() => matchesSelector(a, { applications: [1 as unknown as string] })).toThrow(/^applications: /);
    expect(() => matchesSelector(a, { matchLabels: { team: 1 as unknown as string } })).toThrow(
      /^matchLabels\.team: must be a string/,
    );
    // Inherited properties are no labels.
    expect(matchesSelector(a, { matchLabels: JSON.parse('{"constructor":"x"}') })).toBe(false);
    expect(matchesSelector(a, { matchLabels: JSON.parse('{"__proto__":"x"}') })).toBe(false);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});
