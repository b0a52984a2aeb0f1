import { app, dg } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { applicationStatus, mergeVersions } from '../src/reconcile/reconcileApplication.js';

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
  it('keeps the last known version of an environment whose cluster is unreachable', () => {
    const v1 = mergeVersions(undefined, [{ environment: 'dev', tag: 'v1', digest: dg('a'), health: 'Healthy' }], t1);
    expect(
      mergeVersions(v1, [{ environment: 'dev', health: 'Unknown', message: 'cluster not reachable: timeout' }], t2)[0],
    ).toEqual({
      environment: 'dev',
      tag: 'v1',
      digest: dg('a'),
      health: 'Unknown',
      message: 'cluster not reachable: timeout',
      updatedAt: '2026-12-02T10:00:00Z',
    });
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
