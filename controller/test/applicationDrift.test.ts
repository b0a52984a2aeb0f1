import type { AppProgress, PromotionPlan } from '@kpromo/api';
import { app, deployment, dg, env } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { MemoryCache } from '../src/kube/memoryCache.js';
import { applicationDrift, applicationStatus } from '../src/reconcile/reconcileApplication.js';

const NOW = new Date('2026-03-01T12:00:00Z');
const img = (tag: string, d: string) => `reg/shop/web:${tag}@${d}`;

const plan = (to: string, apps: AppProgress[], targets?: unknown): PromotionPlan =>
  ({
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name: `p-${to}`, namespace: 'ns' },
    spec: { flow: 'main', from: 'dev', to, candidates: [{ application: 'web', from: { tag: 'v2', digest: dg('2') } }] },
    status: { phase: 'Complete', apps, ...(targets ? { targets } : {}) },
  }) as PromotionPlan;

const delivered: AppProgress = {
  application: 'web',
  phase: 'Succeeded',
  digest: dg('2'),
  targetTag: 'v2',
  written: true,
  finishedAt: '2026-03-01T10:00:00Z',
};
const patchedBy = (manager: string) => [{ container: 'main', manager, time: '2026-03-01T11:00:00Z' }];

describe('applicationDrift (from the cache)', () => {
  it('a single-cluster environment: drift where the workload runs another digest; none where never delivered', () => {
    const cache = new MemoryCache();
    const web = app('web');
    cache.apps = [web];
    cache.envs = [env('dev'), env('prod')];
    cache.planList = [plan('prod', [delivered])];
    const w = deployment('web', img('v1', dg('1')));
    w.metadata.imageWriters = patchedBy('kubectl-set');
    cache.workloads.set('prod/Deployment/web', w);
    // dev runs something else too, but kpromo never delivered web there.
    cache.workloads.set('dev/Deployment/web', deployment('web', img('v3', dg('3'))));
    const drift = applicationDrift(cache, web, cache.envs, new Set(), NOW);
    expect(drift).toEqual([
      {
        environment: 'prod',
        expected: { tag: 'v2', digest: dg('2'), plan: 'p-prod' },
        found: { tag: 'v1', digest: dg('1') },
        since: '2026-03-01T12:00:00Z',
        changedBy: 'kubectl-set',
      },
    ]);
    // Status: the drift and condition Drifted at the Application's generation.
    web.metadata.generation = 4;
    const st = applicationStatus(web, [], NOW, drift);
    expect(st.drift).toEqual(drift);
    expect(st.conditions?.find((c) => c.type === 'Drifted')).toMatchObject({
      status: 'True',
      reason: 'DriftDetected',
      observedGeneration: 4,
    });
    // Back on the delivered digest: no drift, Drifted False, status.drift gone.
    cache.workloads.set('prod/Deployment/web', deployment('web', img('v2', dg('2'))));
    const cleared = applicationStatus(
      { ...web, status: st },
      [],
      NOW,
      applicationDrift(cache, web, cache.envs, new Set(), NOW),
    );
    expect(cleared.drift).toBeUndefined();
    expect(cleared.conditions?.find((c) => c.type === 'Drifted')).toMatchObject({
      status: 'False',
      reason: 'AsDelivered',
    });
  });

  it('a fleet: per cluster, against what the fleet plan delivered in that cluster', () => {
    const cache = new MemoryCache();
    const web = app('web');
    cache.apps = [web];
    const prod = env('prod', {
      cluster: undefined,
      clusters: [
        { name: 'eu', cluster: { context: 'eu' } },
        { name: 'us', cluster: { context: 'us' } },
      ],
    });
    cache.envs = [prod];
    cache.planList = [
      plan(
        'prod',
        [{ ...delivered, finishedAt: undefined }],
        [
          {
            cluster: 'eu',
            wave: 'all',
            apps: [{ application: 'web', phase: 'Succeeded', finishedAt: '2026-03-01T10:00:00Z' }],
          },
          {
            cluster: 'us',
            wave: 'all',
            apps: [{ application: 'web', phase: 'Succeeded', finishedAt: '2026-03-01T10:00:00Z' }],
          },
        ],
      ),
    ];
    cache.workloads.set('prod@eu/Deployment/web', deployment('web', img('v2', dg('2'))));
    cache.workloads.set('prod@us/Deployment/web', deployment('web', img('v1', dg('1'))));
    expect(applicationDrift(cache, web, cache.envs, new Set(), NOW)).toEqual([
      expect.objectContaining({ environment: 'prod', cluster: 'us', found: { tag: 'v1', digest: dg('1') } }),
    ]);
  });
});
