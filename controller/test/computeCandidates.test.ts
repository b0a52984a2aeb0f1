import type { Application, Environment, EnvironmentVersion } from '@kpromo/api';
import { app, deployment, dg, env, flow } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { computeCandidates, globToRegExp, matchesSelector } from '../src/candidates/computeCandidates.js';
import { fleetVersion, runningVersion } from '../src/candidates/runningVersion.js';
import { MemoryCache } from '../src/kube/memoryCache.js';

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

describe('fleetVersion', () => {
  const ok = (tag: string, digest: string) => ({ tag, digest, health: 'Healthy' as const });
  const per = (...vs: Array<[string, Partial<EnvironmentVersion>]>) =>
    vs.map(([cluster, v]) => ({
      cluster,
      version: { environment: 'prod', health: 'Healthy', ...v } as EnvironmentVersion,
    }));

  it('clusters that agree: their version, no drift, each cluster listed', () => {
    expect(fleetVersion('prod', per(['p1', ok('v1.2.0', dg('a'))], ['p2', ok('v1.2.0', dg('a'))]))).toStrictEqual({
      environment: 'prod',
      tag: 'v1.2.0',
      digest: dg('a'),
      health: 'Healthy',
      clusters: [
        { cluster: 'p1', tag: 'v1.2.0', digest: dg('a'), health: 'Healthy' },
        { cluster: 'p2', tag: 'v1.2.0', digest: dg('a'), health: 'Healthy' },
      ],
    });
  });

  it('clusters that disagree: drift, the version most run, and who runs what', () => {
    const v = fleetVersion(
      'prod',
      per(['p1', ok('v1.1.0', dg('b'))], ['p2', ok('v1.2.0', dg('a'))], ['p3', ok('v1.2.0', dg('a'))]),
    );
    expect(v).toMatchObject({
      environment: 'prod',
      tag: 'v1.2.0',
      digest: dg('a'),
      health: 'Healthy',
      drift: true,
      message: 'clusters disagree: v1.1.0 in p1; v1.2.0 in p2, p3',
    });
    expect(v.clusters?.map((c) => [c.cluster, c.tag])).toEqual([
      ['p1', 'v1.1.0'],
      ['p2', 'v1.2.0'],
      ['p3', 'v1.2.0'],
    ]);
  });

  it("a tie goes to the first cluster's version", () => {
    expect(fleetVersion('prod', per(['p1', ok('v2.0.0', dg('c'))], ['p2', ok('v1.0.0', dg('d'))]))).toMatchObject({
      tag: 'v2.0.0',
      digest: dg('c'),
      drift: true,
      message: 'clusters disagree: v2.0.0 in p1; v1.0.0 in p2',
    });
    const twoEach = per(
      ['p1', ok('v1.0.0', dg('d'))],
      ['p2', ok('v2.0.0', dg('c'))],
      ['p3', ok('v2.0.0', dg('c'))],
      ['p4', ok('v1.0.0', dg('d'))],
    );
    expect(fleetVersion('prod', twoEach)).toMatchObject({ tag: 'v1.0.0', digest: dg('d'), drift: true });
  });

  it('the same tag with another digest is drift', () => {
    expect(fleetVersion('prod', per(['p1', ok('v1.0.0', dg('a'))], ['p2', ok('v1.0.0', dg('b'))])).drift).toBe(true);
  });

  it("health is the worst cluster's, each unhealthy cluster named in the message", () => {
    const v = fleetVersion(
      'prod',
      per(
        ['p1', ok('v1.0.0', dg('a'))],
        ['p2', { ...ok('v1.0.0', dg('a')), health: 'Progressing', message: 'cart: 1/2 updated' }],
        ['p3', { ...ok('v1.0.0', dg('a')), health: 'Degraded', message: 'cart: crash looping' }],
      ),
    );
    expect(v).toMatchObject({ health: 'Degraded', message: 'p2: cart: 1/2 updated; p3: cart: crash looping' });
    expect(v.drift).toBeUndefined();
    const rank = (...hs: EnvironmentVersion['health'][]) =>
      fleetVersion(
        'prod',
        per(
          ...hs.map((health, i): [string, Partial<EnvironmentVersion>] => [`p${i}`, { ...ok('v1', dg('a')), health }]),
        ),
      ).health;
    expect(rank('Healthy', 'Progressing')).toBe('Progressing');
    expect(rank('Progressing', 'Unknown')).toBe('Unknown');
    expect(rank('Unknown', 'Degraded', 'Healthy')).toBe('Degraded');
  });

  it('a cluster where the app has no workload (Missing) is listed, but neither drifts nor lowers the health', () => {
    const missing = { health: 'Missing' as const, message: 'Deployment cart not found in shop' };
    const v = fleetVersion(
      'prod',
      per(['p1', missing], ['p2', ok('v1.0.0', dg('a'))], ['p3', { ...ok('v1.0.0', dg('a')), health: 'Progressing' }]),
    );
    expect(v).toStrictEqual({
      environment: 'prod',
      tag: 'v1.0.0',
      digest: dg('a'),
      health: 'Progressing',
      message: 'p3: Progressing',
      clusters: [
        { cluster: 'p1', health: 'Missing', message: 'Deployment cart not found in shop' },
        { cluster: 'p2', tag: 'v1.0.0', digest: dg('a'), health: 'Healthy' },
        { cluster: 'p3', tag: 'v1.0.0', digest: dg('a'), health: 'Progressing' },
      ],
    });
    // A Missing cluster does not outvote the ones that run a version, nor make them disagree.
    expect(fleetVersion('prod', per(['p1', missing], ['p2', missing], ['p3', ok('v2.0.0', dg('b'))]))).toMatchObject({
      tag: 'v2.0.0',
      digest: dg('b'),
      health: 'Healthy',
    });
  });

  it('an app that runs in no cluster is Missing', () => {
    const v = fleetVersion(
      'prod',
      per(['p1', { health: 'Missing', message: 'Deployment cart not found in shop' }], ['p2', { health: 'Missing' }]),
    );
    expect(v).toMatchObject({
      environment: 'prod',
      health: 'Missing',
      message: 'p1: Deployment cart not found in shop; p2: Missing',
    });
    expect(v.tag).toBeUndefined();
    expect(v.drift).toBeUndefined();
  });

  it('a fleet without clusters is Missing', () => {
    expect(fleetVersion('prod', [])).toStrictEqual({
      environment: 'prod',
      health: 'Missing',
      message: 'the fleet has no clusters',
      clusters: [],
    });
  });
});

describe('computeCandidates with fleets', () => {
  const f = flow(['stable', 'prod']);
  const cart = [app('cart')];
  const disagree = 'clusters disagree: v1.2.0 in s1, s2; v1.1.0 in s3';

  it('a source whose clusters disagree is skipped: SourceDrift', () => {
    const v = versions({
      cart: { stable: { tag: 'v1.2.0', digest: dg('a'), drift: true, message: disagree } },
    });
    const r = computeCandidates(f, cart, v, 'stable', 'prod');
    expect(r.candidates).toEqual([]);
    expect(r.skipped).toEqual([
      {
        application: 'cart',
        reason: 'SourceDrift',
        message: `the clusters of stable run different versions (${disagree}); promote from a stage whose clusters agree`,
      },
    ]);
  });

  it('a target where one cluster lags is a candidate even when most of its clusters run the source digest', () => {
    const v = versions({
      cart: {
        stable: { tag: 'v1.2.0', digest: dg('a') },
        prod: { tag: 'v1.2.0', digest: dg('a'), drift: true, message: 'clusters disagree' },
      },
    });
    expect(computeCandidates(f, cart, v, 'stable', 'prod')).toEqual({
      from: 'stable',
      to: 'prod',
      candidates: [
        { application: 'cart', from: { tag: 'v1.2.0', digest: dg('a') }, to: { tag: 'v1.2.0', digest: dg('a') } },
      ],
      skipped: [],
    });
    const agreed = versions({
      cart: { stable: { tag: 'v1.2.0', digest: dg('a') }, prod: { tag: 'v1.2.0', digest: dg('a') } },
    });
    expect(computeCandidates(f, cart, agreed, 'stable', 'prod').skipped.map((s) => s.reason)).toEqual(['UpToDate']);
  });

  it('read from the clusters of fleet Environments (runningVersion)', () => {
    const c = new MemoryCache();
    const fleet = (name: string, clusters: string[]) =>
      env(name, { cluster: undefined, clusters: clusters.map((n) => ({ name: n, cluster: { context: n } })) });
    const stable = fleet('stable', ['s1', 's2']);
    const prod = fleet('prod', ['p1', 'p2', 'p3']);
    c.workloads.set('stable@s1/Deployment/cart', deployment('cart', `reg/shop/cart:v1.2.0@${dg('a')}`));
    c.workloads.set('stable@s2/Deployment/cart', deployment('cart', `reg/shop/cart:v1.2.0@${dg('a')}`));
    c.workloads.set('prod@p1/Deployment/cart', deployment('cart', `reg/shop/cart:v1.2.0@${dg('a')}`));
    c.workloads.set('prod@p2/Deployment/cart', deployment('cart', `reg/shop/cart:v1.1.0@${dg('b')}`));
    c.workloads.set('prod@p3/Deployment/cart', deployment('cart', `reg/shop/cart:v1.2.0@${dg('a')}`));
    const envs: Record<string, Environment> = { stable, prod };
    const lookup = (a: Application, e: string) => runningVersion(c, a, envs[e]);
    expect(lookup(cart[0], 'prod')).toMatchObject({
      environment: 'prod',
      tag: 'v1.2.0',
      drift: true,
      message: 'clusters disagree: v1.2.0 in p1, p3; v1.1.0 in p2',
    });
    expect(computeCandidates(f, cart, lookup, 'stable', 'prod').candidates).toEqual([
      { application: 'cart', from: { tag: 'v1.2.0', digest: dg('a') }, to: { tag: 'v1.2.0', digest: dg('a') } },
    ]);
    // Once the lagging cluster runs it too, prod is up to date.
    c.workloads.set('prod@p2/Deployment/cart', deployment('cart', `reg/shop/cart:v1.2.0@${dg('a')}`));
    expect(computeCandidates(f, cart, lookup, 'stable', 'prod').skipped.map((s) => s.reason)).toEqual(['UpToDate']);
    // And a stable cluster that moves on makes stable a drifted source.
    c.workloads.set('stable@s2/Deployment/cart', deployment('cart', `reg/shop/cart:v1.3.0@${dg('c')}`));
    expect(computeCandidates(f, cart, lookup, 'stable', 'prod').skipped.map((s) => s.reason)).toEqual(['SourceDrift']);
  });
});
