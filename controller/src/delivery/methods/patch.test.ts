import { env } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import type { AdoptedContainer, FoundEnvironment } from '../../extension/adoption.js';
import type { WorkloadKind } from '../../extension/workloadKind.js';
import { builtinWorkloadKinds } from '../../rollout/registry.js';
import { patchDelivery } from './patch.js';

const kinds = (...names: string[]) => names.map((n) => builtinWorkloadKinds.get(n)!);

describe('delivery.method patch', () => {
  it('accessNeeds: patch on each kind it patches, create and delete for kinds replaced on change (Jobs)', () => {
    const prod = env('prod');
    expect(patchDelivery.accessNeeds!({ env: prod, workloadKinds: kinds('Deployment', 'Job', 'Rollout') })).toEqual([
      { verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'app-prod' },
      { verb: 'create', group: 'batch', resource: 'jobs', namespace: 'app-prod' },
      { verb: 'delete', group: 'batch', resource: 'jobs', namespace: 'app-prod' },
      { verb: 'patch', group: 'argoproj.io', resource: 'rollouts', namespace: 'app-prod' },
    ]);
    // A kind it cannot patch fails the promotion with UnsupportedWorkloadKind: no verb to check.
    const unpatchable = { ...builtinWorkloadKinds.get('Deployment')!, kind: 'WebService', patch: undefined };
    expect(patchDelivery.accessNeeds!({ env: prod, workloadKinds: [unpatchable as WorkloadKind] })).toEqual([]);
  });

  it('has no doctor check of its own (the controller check reports its rights) and infers as the fallback', () => {
    expect(patchDelivery.diagnose).toBeUndefined();
    const found = { name: 'dev', workloads: [] } as unknown as FoundEnvironment;
    const c = { workload: { labels: {} }, host: 'r', repository: 'x', application: 'x' } as unknown as AdoptedContainer;
    expect(patchDelivery.infer).toMatchObject({ evidence: 'fallback' });
    expect(patchDelivery.infer!.recognises(c, found)).toBe(true);
    expect(patchDelivery.infer!.propose({ found, containers: [] })).toEqual({ delivery: { method: 'patch' } });
  });
});
