import type { Application, Environment } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { deliveryCondition, environmentStatus } from '../reconcile/reconcileStatus.js';
import { builtinWorkloadKinds } from '../rollout/registry.js';
import { deliveryNeeds } from './deliveryAccess.js';

const env = (method: 'patch' | 'helmRelease' | 'git' | 'imagePolicy', extra: Record<string, unknown> = {}) =>
  ({
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'Environment',
    metadata: { name: 'prod', namespace: 'shop', generation: 3 },
    spec: {
      cluster: { context: 'prod' },
      namespace: 'web',
      registry: { host: 'r.example.com' },
      delivery: { method, ...extra },
    },
  }) as Environment;
const app = (name: string, workloads: Application['spec']['workloads']) =>
  ({
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace: 'shop' },
    spec: { owner: 't', image: { repository: name }, workloads },
  }) as Application;

describe("the controller's delivery rights per Environment", () => {
  it('needs patch on each workload kind its Applications name there, create and delete for Jobs', () => {
    const apps = [
      app('cart', [
        { kind: 'Deployment', name: 'cart' },
        { kind: 'Job', name: 'migrate' },
      ]),
      app('web', [{ kind: 'StatefulSet', name: 'web' }]),
      // Only in dev: nothing needed in prod for it.
      app('report', [{ kind: 'CronJob', name: 'report', environments: ['dev'] }]),
    ];
    expect(deliveryNeeds(env('patch'), apps, builtinWorkloadKinds)).toEqual([
      { verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'web' },
      { verb: 'create', group: 'batch', resource: 'jobs', namespace: 'web' },
      { verb: 'delete', group: 'batch', resource: 'jobs', namespace: 'web' },
      { verb: 'patch', group: 'apps', resource: 'statefulsets', namespace: 'web' },
    ]);
    expect(deliveryNeeds(env('helmRelease'), apps, builtinWorkloadKinds)).toEqual([
      { verb: 'patch', group: 'helm.toolkit.fluxcd.io', resource: 'helmreleases', namespace: 'web' },
    ]);
    // git and imagePolicy write nothing in the cluster; their verdict reads Flux's object there.
    expect(deliveryNeeds(env('git'), apps, builtinWorkloadKinds)).toEqual([]);
    const git = { repository: 'https://g/x.git', path: '{app}.yaml' };
    expect(
      deliveryNeeds(env('git', { git: { ...git, kustomization: { name: 'apps' } } }), apps, builtinWorkloadKinds),
    ).toEqual([
      { verb: 'get', group: 'kustomize.toolkit.fluxcd.io', resource: 'kustomizations', namespace: 'flux-system' },
    ]);
    expect(
      deliveryNeeds(
        env('git', { git: { ...git, kustomization: { name: 'apps', cluster: 'control' } } }),
        apps,
        builtinWorkloadKinds,
      ),
    ).toEqual([]);
    expect(
      deliveryNeeds(env('imagePolicy', { imagePolicy: { namespace: 'images' } }), apps, builtinWorkloadKinds),
    ).toEqual([{ verb: 'get', group: 'image.toolkit.fluxcd.io', resource: 'imagepolicies', namespace: 'images' }]);
  });

  it('records DeliveryPermitted on the Environment: False naming each missing verb, Unknown when it could not ask', () => {
    const missing = [{ verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'web' }];
    const now = new Date('2026-12-05T10:00:00Z');
    const s = environmentStatus(env('patch'), { synced: true, helmReleases: false }, 2, now, {
      missing,
      checkedAt: 0,
    });
    expect(s.conditions?.find((c) => c.type === 'DeliveryPermitted')).toMatchObject({
      status: 'False',
      reason: 'Forbidden',
      observedGeneration: 3,
      message:
        "the controller's identity in this cluster may not patch deployments.apps in namespace web: promotions into this Environment fail until it is granted",
    });
    expect(s.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(deliveryCondition({ missing: [], checkedAt: 0 })).toMatchObject({ status: 'True', reason: 'Permitted' });
    expect(deliveryCondition({ missing: [], error: 'connect ECONNREFUSED', checkedAt: 0 })).toMatchObject({
      status: 'Unknown',
      reason: 'CheckFailed',
    });
    // Not checked yet: no condition is invented.
    const before = environmentStatus(env('patch'), { synced: true, helmReleases: false }, 2, now);
    expect(before.conditions?.map((c) => c.type)).toEqual(['Ready']);
  });
});
