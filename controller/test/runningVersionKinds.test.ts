import { app, dg, env } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { runningVersion } from '../src/candidates/runningVersion.js';
import type { Workload } from '../src/kube/cacheView.js';
import { MemoryCache } from '../src/kube/memoryCache.js';

const IMAGE = `reg/shop/x:v2@${dg('a')}`;
/** As listed by an informer: no `kind` on the object, the Application's reference names it. */
const versionOf = (kind: string, w: object) => {
  const c = new MemoryCache();
  c.workloads.set(`prod/${kind}/x`, { metadata: { name: 'x', generation: 1 }, ...w } as Workload);
  return runningVersion(c, app('x', { workloads: [{ kind: kind as 'Deployment', name: 'x' }] }), env('prod'));
};
const template = { spec: { containers: [{ name: 'main', image: IMAGE }] } };

describe('runningVersion by workload kind', () => {
  it('a CronJob runs the image of its job template', () => {
    expect(versionOf('CronJob', { spec: { schedule: '@daily', jobTemplate: { spec: { template } } } })).toEqual({
      environment: 'prod',
      tag: 'v2',
      digest: dg('a'),
      health: 'Healthy',
    });
  });
  it('a failed Job is Degraded, a running one Progressing', () => {
    const failed = { type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'limit' };
    expect(versionOf('Job', { spec: { template }, status: { failed: 1, conditions: [failed] } })).toMatchObject({
      digest: dg('a'),
      health: 'Degraded',
      message: 'x: Job failed (BackoffLimitExceeded): limit',
    });
    expect(versionOf('Job', { spec: { template }, status: { active: 1 } }).health).toBe('Progressing');
  });
  it('a paused Rollout is Progressing, saying Paused', () => {
    const v = versionOf('Rollout', {
      spec: { replicas: 1, template, strategy: { canary: {} } },
      status: { observedGeneration: '1', pauseConditions: [{ reason: 'CanaryPauseStep' }], currentPodHash: 'h' },
    });
    expect(v).toMatchObject({ health: 'Progressing', message: expect.stringMatching(/^x: Paused: Rollout is paused/) });
  });
  it('a DaemonSet with every pod updated and available is Healthy', () => {
    const ds = {
      spec: { template },
      status: { observedGeneration: 1, desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2 },
    };
    expect(versionOf('DaemonSet', ds).health).toBe('Healthy');
  });
});
