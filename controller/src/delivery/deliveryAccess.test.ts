import type { Application, Environment } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import type { DeliveryMethod } from '../extension/deliveryMethod.js';
import { registryOf } from '../extension/registry.js';
import { deliveryCondition, environmentStatus } from '../reconcile/reconcileStatus.js';
import { builtinWorkloadKinds } from '../rollout/registry.js';
import { deliveryNeeds } from './deliveryAccess.js';
import { builtinDeliveryMethods } from './registry.js';

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

const registry = { deliveryMethods: builtinDeliveryMethods, workloadKinds: builtinWorkloadKinds };

describe("the controller's delivery rights per Environment", () => {
  it("asks the Environment's delivery method, with the registered kinds its Applications name there, sorted", () => {
    const apps = [
      app('cart', [
        { kind: 'Deployment', name: 'cart' },
        { kind: 'Job', name: 'migrate' },
        // Not registered: the promotion fails on it with its own reason, nothing to check.
        { kind: 'WebService' as 'Deployment', name: 'edge' },
      ]),
      app('web', [{ kind: 'StatefulSet', name: 'web' }]),
      // Only in dev: nothing needed in prod for it.
      app('report', [{ kind: 'CronJob', name: 'report', environments: ['dev'] }]),
    ];
    const seen: string[][] = [];
    const probe: DeliveryMethod = {
      name: 'probe',
      deliver: async () => undefined,
      accessNeeds: ({ env: e, workloadKinds }) => {
        seen.push(workloadKinds.map((k) => k.kind));
        return [{ verb: 'get', group: 'example.com', resource: 'probes', namespace: e.spec.namespace }];
      },
    };
    const withProbe = { ...registry, deliveryMethods: registryOf('delivery method', [probe], (m) => m.name) };
    expect(deliveryNeeds(env('probe' as 'patch'), apps, withProbe)).toEqual([
      { verb: 'get', group: 'example.com', resource: 'probes', namespace: 'web' },
    ]);
    expect(seen).toEqual([['Deployment', 'Job', 'StatefulSet']]);
    // The built-in patch method turns those kinds into verbs (its own rule: methods/patch.test.ts).
    expect(deliveryNeeds(env('patch'), apps, registry)).toEqual([
      { verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'web' },
      { verb: 'create', group: 'batch', resource: 'jobs', namespace: 'web' },
      { verb: 'delete', group: 'batch', resource: 'jobs', namespace: 'web' },
      { verb: 'patch', group: 'apps', resource: 'statefulsets', namespace: 'web' },
    ]);
    // A method that is not registered, or has no accessNeeds, needs nothing checked.
    expect(deliveryNeeds(env('probe' as 'patch'), apps, registry)).toEqual([]);
    const silent = registryOf('delivery method', [{ ...probe, accessNeeds: undefined }], (m) => m.name);
    expect(deliveryNeeds(env('probe' as 'patch'), apps, { ...registry, deliveryMethods: silent })).toEqual([]);
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
