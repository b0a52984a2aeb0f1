import type { AppProgress, PromotionPlan } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { valuesPatch } from '../src/delivery/helmRelease.js';
import { MemoryCache } from '../src/kube/cacheView.js';
import { canAcquire } from '../src/leader/leaderElection.js';
import { appsToWorkOn, planOutcome, validatePlan } from '../src/reconcile/planDecisions.js';
import { applicationStatus, mergeVersions } from '../src/reconcile/reconcileApplication.js';
import { formatImageRef, parseImageRef } from '../src/util/imageRef.js';
import { app, dg, env, flow } from './fixtures.js';

const plan = (spec: Partial<PromotionPlan['spec']>): PromotionPlan => ({
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'PromotionPlan',
  metadata: { name: 'p', namespace: 'ns' },
  spec: {
    flow: 'main',
    from: 'dev',
    to: 'stable',
    candidates: [{ application: 'cart', from: { tag: 'v1', digest: dg('a') } }],
    ...spec,
  },
});

describe('validatePlan', () => {
  const cache = new MemoryCache();
  cache.envs = [env('dev'), env('stable'), env('prod')];
  cache.flowList = [flow(['dev', 'stable', 'prod'])];
  cache.apps = [app('cart')];
  it('resolves a good plan', () => {
    const v = validatePlan(plan({}), cache);
    expect(v.ok && v.resolved.apps.has('cart')).toBe(true);
  });
  it.each([
    [{ flow: 'nope' }, 'FlowNotFound'],
    [{ to: 'qa' }, 'EnvironmentNotFound'],
    [{ to: 'prod' }, 'NotAdjacent'],
    [{ from: 'stable', to: 'dev' }, 'NotAdjacent'],
    [{ candidates: [] }, 'NoCandidates'],
    [{ candidates: [{ application: 'ghost', from: { tag: 'v1', digest: dg('a') } }] }, 'ApplicationNotFound'],
    [{ action: 'rollback' as const, rollbackOf: 'missing', candidates: [] }, 'InvalidRollback'],
  ])('rejects %j with %s', (spec, reason) => {
    const v = validatePlan(plan(spec), cache);
    expect(v.ok ? 'ok' : v.reason).toBe(reason);
  });
});

describe('plan decisions', () => {
  const ap = (application: string, phase: AppProgress['phase']): AppProgress => ({ application, phase });
  it('keeps in-flight apps and fills free slots with pending ones in order', () => {
    const apps = [
      ap('a', 'Succeeded'),
      ap('b', 'RollingOut'),
      ap('c', 'Pending'),
      ap('d', 'Pending'),
      ap('e', 'Pending'),
    ];
    expect(appsToWorkOn(apps, 3).map((a) => a.application)).toEqual(['b', 'c', 'd']);
    expect(appsToWorkOn(apps, 1).map((a) => a.application)).toEqual(['b']);
  });
  it('derives Complete/Incomplete only when every app is terminal', () => {
    expect(planOutcome([ap('a', 'Succeeded'), ap('b', 'Writing')])).toBeUndefined();
    expect(planOutcome([ap('a', 'Succeeded'), ap('b', 'Succeeded')])).toEqual({
      phase: 'Complete',
      succeeded: 2,
      failed: 0,
    });
    expect(planOutcome([ap('a', 'Succeeded'), ap('b', 'Failed')])).toEqual({
      phase: 'Incomplete',
      succeeded: 1,
      failed: 1,
    });
  });
});

describe('helpers', () => {
  it('builds HelmRelease values patches from dot paths', () => {
    expect(
      valuesPatch([
        ['image.tag', 'v1'],
        ['image.digest', 'sha256:x'],
      ]),
    ).toEqual({ image: { tag: 'v1', digest: 'sha256:x' } });
  });
  it('parses image references with registry ports, tags and digests', () => {
    expect(parseImageRef(`127.0.0.1:5000/shop/cart:v1.2.0@${dg('a')}`)).toEqual({
      host: '127.0.0.1:5000',
      repository: 'shop/cart',
      tag: 'v1.2.0',
      digest: dg('a'),
    });
    expect(parseImageRef('nginx:1.27')).toEqual({
      host: undefined,
      repository: 'nginx',
      tag: '1.27',
      digest: undefined,
    });
    expect(parseImageRef('localhost:5000/app')).toMatchObject({
      host: 'localhost:5000',
      repository: 'app',
      tag: undefined,
    });
    expect(formatImageRef({ host: 'r.io', repository: 'a/b', tag: 't', digest: dg('c') })).toBe(
      `r.io/a/b:t@${dg('c')}`,
    );
  });
  it('lease acquisition: free, own, released or expired leases only', () => {
    const now = new Date('2026-12-02T10:00:10Z');
    expect(canAcquire(undefined, 'me', now)).toBe(true);
    expect(canAcquire({ holderIdentity: null }, 'me', now)).toBe(true);
    expect(
      canAcquire(
        { holderIdentity: 'me', renewTime: '2026-12-02T10:00:09.000000Z', leaseDurationSeconds: 15 },
        'me',
        now,
      ),
    ).toBe(true);
    expect(
      canAcquire(
        { holderIdentity: 'other', renewTime: '2026-12-02T10:00:00.000000Z', leaseDurationSeconds: 15 },
        'me',
        now,
      ),
    ).toBe(false);
    expect(
      canAcquire(
        { holderIdentity: 'other', renewTime: '2026-12-02T09:59:50.000000Z', leaseDurationSeconds: 15 },
        'me',
        now,
      ),
    ).toBe(true);
  });
});

describe('application status', () => {
  const t1 = new Date('2026-12-02T10:00:00Z');
  const t2 = new Date('2026-12-02T11:00:00Z');
  it('keeps updatedAt while the version is unchanged and bumps it on change', () => {
    const v1 = mergeVersions(undefined, [{ environment: 'dev', tag: 'v1', digest: dg('a'), health: 'Healthy' }], t1);
    expect(v1[0].updatedAt).toBe('2026-12-02T10:00:00Z');
    expect(
      mergeVersions(v1, [{ environment: 'dev', tag: 'v1', digest: dg('a'), health: 'Progressing' }], t2)[0],
    ).toMatchObject({ updatedAt: '2026-12-02T10:00:00Z', health: 'Progressing' });
    expect(
      mergeVersions(v1, [{ environment: 'dev', tag: 'v2', digest: dg('b'), health: 'Healthy' }], t2)[0].updatedAt,
    ).toBe('2026-12-02T11:00:00Z');
    expect(mergeVersions(v1, [{ environment: 'dev', health: 'Missing' }], t2)[0].updatedAt).toBeUndefined();
  });
  it('derives a Ready condition and is stable across identical reconciles', () => {
    const a = app('cart');
    a.metadata.generation = 3;
    const s1 = applicationStatus(a, [{ environment: 'dev', tag: 'v1', digest: dg('a'), health: 'Degraded' }], t1);
    expect(s1.conditions?.[0]).toMatchObject({
      type: 'Ready',
      status: 'False',
      reason: 'Degraded',
      observedGeneration: 3,
    });
    a.status = s1;
    expect(applicationStatus(a, [{ environment: 'dev', tag: 'v1', digest: dg('a'), health: 'Degraded' }], t2)).toEqual(
      s1,
    );
  });
});
