import type { EnvironmentVersion } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { computeCandidates, globToRegExp, matchesSelector } from '../src/candidates/computeCandidates.js';
import { runningVersion } from '../src/candidates/runningVersion.js';
import { app, deployment, dg, env, flow } from './fixtures.js';
import { MemoryCache } from './support/memoryCache.js';

const versions =
  (m: Record<string, Record<string, Partial<EnvironmentVersion>>>) =>
  (a: { metadata: { name: string } }, e: string) => {
    const v = m[a.metadata.name]?.[e];
    return v ? ({ environment: e, health: 'Healthy', ...v } as EnvironmentVersion) : undefined;
  };

describe('computeCandidates', () => {
  const f = flow(['dev', 'stable', 'prod']);
  const apps = [app('cart'), app('checkout'), app('search'), app('legacy')];
  const v = versions({
    cart: { dev: { tag: 'v1.2.0', digest: dg('a') }, stable: { tag: 'v1.1.0', digest: dg('b') } },
    checkout: { dev: { tag: 'v2.0.0', digest: dg('c') }, stable: { tag: 'v2.0.0', digest: dg('c') } },
    search: { dev: { tag: 'v3.0.0', digest: dg('d') } },
    legacy: { dev: { tag: 'latest', digest: dg('e') } },
  });

  it('lists changed apps with from/to versions and explains every skipped app', () => {
    const r = computeCandidates(f, apps, v, 'dev', 'stable');
    expect(r.candidates).toEqual([
      { application: 'cart', from: { tag: 'v1.2.0', digest: dg('a') }, to: { tag: 'v1.1.0', digest: dg('b') } },
      { application: 'search', from: { tag: 'v3.0.0', digest: dg('d') } },
    ]);
    expect(Object.fromEntries(r.skipped.map((s) => [s.application, s.reason]))).toEqual({
      checkout: 'UpToDate',
      legacy: 'TagPatternMismatch',
    });
  });

  it('rejects non-adjacent stages with the valid transitions in the message', () => {
    expect(() => computeCandidates(f, apps, v, 'dev', 'prod')).toThrow(/dev -> stable, stable -> prod/);
    expect(() => computeCandidates(f, apps, v, 'stable', 'dev')).toThrow(/not a stage transition/);
  });

  it('skips unhealthy sources and sources without a digest', () => {
    const v2 = versions({
      cart: { dev: { tag: 'v1.0.0', digest: dg('a'), health: 'Progressing' } },
      search: { dev: { tag: 'v1.0.0' } },
    });
    const r = computeCandidates(f, apps, v2, 'dev', 'stable');
    expect(r.candidates).toEqual([]);
    expect(r.skipped.find((s) => s.application === 'cart')?.reason).toBe('SourceNotHealthy');
    expect(r.skipped.find((s) => s.application === 'search')?.reason).toBe('NoDigest');
  });

  it('applies the flow selector (globs, teams, labels) and the caller filter', () => {
    const a = [
      app('shop-cart', { owner: 'team-a', labels: { tier: 'web' } }),
      app('shop-api', { owner: 'team-b' }),
      app('admin'),
    ];
    const all = versions(
      Object.fromEntries(a.map((x) => [x.metadata.name, { dev: { tag: 'v1.0.0', digest: dg('f') } }])),
    );
    const sel = (s: Parameters<typeof flow>[1]) =>
      computeCandidates(flow(['dev', 'stable'], s), a, all, 'dev', 'stable').candidates.map((c) => c.application);
    expect(sel({ selector: { applications: ['shop-*'] } })).toEqual(['shop-api', 'shop-cart']);
    expect(sel({ selector: { teams: ['team-b'] } })).toEqual(['shop-api']);
    expect(sel({ selector: { matchLabels: { tier: 'web' } } })).toEqual(['shop-cart']);
    expect(sel({ tagPattern: '^v2' })).toEqual([]);
    const filtered = computeCandidates(flow(['dev', 'stable']), a, all, 'dev', 'stable', { applications: ['admin'] });
    expect(filtered.candidates.map((c) => c.application)).toEqual(['admin']);
  });

  it('gives a clear error for an invalid tag pattern', () => {
    expect(() => computeCandidates(flow(['dev', 'stable'], { tagPattern: '([' }), apps, v, 'dev', 'stable')).toThrow(
      /invalid regular expression/,
    );
  });

  it('glob and selector helpers', () => {
    expect(globToRegExp('a.b*').test('a.bc')).toBe(true);
    expect(globToRegExp('a.b*').test('axbc')).toBe(false);
    expect(matchesSelector(app('x', {}, { team: 'y' }), { matchLabels: { team: 'y' } })).toBe(true);
  });
});

describe('runningVersion', () => {
  it('reads tag/digest from the workload image and health from its rollout state', () => {
    const c = new MemoryCache();
    const dev = env('dev');
    c.workloads.set('dev/Deployment/cart', deployment('cart', `reg/shop/cart:v1.2.0@${dg('a')}`));
    c.workloads.set('dev/Deployment/search', deployment('search', 'reg/shop/search:v3', false));
    expect(runningVersion(c, app('cart'), dev)).toEqual({
      environment: 'dev',
      tag: 'v1.2.0',
      digest: dg('a'),
      health: 'Healthy',
    });
    expect(runningVersion(c, app('search'), dev).health).toBe('Progressing');
    expect(runningVersion(c, app('gone'), dev).health).toBe('Missing');
    const scoped = app('cart', { workloads: [{ kind: 'Deployment', name: 'cart', environments: ['prod'] }] });
    expect(runningVersion(c, scoped, dev).health).toBe('Missing');
  });

  it('answers again from the same objects, reads again when a workload object is replaced, and never shares its answer', () => {
    const c = new MemoryCache();
    const dev = env('dev');
    const cart = app('cart');
    c.workloads.set('dev/Deployment/cart', deployment('cart', `reg/shop/cart:v1.2.0@${dg('a')}`));
    const first = runningVersion(c, cart, dev);
    first.digest = 'changed by a caller';
    const second = runningVersion(c, cart, dev);
    expect(second).toEqual({ environment: 'dev', tag: 'v1.2.0', digest: dg('a'), health: 'Healthy' });
    expect(second).not.toBe(first);
    // The cache replaces an object on change: the new object is read.
    c.workloads.set('dev/Deployment/cart', deployment('cart', `reg/shop/cart:v1.3.0@${dg('b')}`, false));
    expect(runningVersion(c, cart, dev)).toMatchObject({ tag: 'v1.3.0', digest: dg('b'), health: 'Progressing' });
    // A workload that disappears makes it Missing, and one that comes back is read again.
    c.workloads.delete('dev/Deployment/cart');
    expect(runningVersion(c, cart, dev).health).toBe('Missing');
    c.workloads.set('dev/Deployment/cart', deployment('cart', `reg/shop/cart:v1.4.0@${dg('c')}`));
    expect(runningVersion(c, cart, dev)).toMatchObject({ tag: 'v1.4.0', health: 'Healthy' });
  });
});
