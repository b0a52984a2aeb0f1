import type { Environment, PromotionFlow, Stage } from '@kpromo/api';
import { app, env } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import type { DoctorContext } from '../../src/doctor/check.js';
import { deliveryCheck } from '../../src/doctor/delivery.js';
import type { DeliveryMethod, DiagnoseContext } from '../../src/extension/deliveryMethod.js';
import type { KubeRest } from '../../src/kube/rest.js';

const flow = (name: string, stages: Stage[]) =>
  ({ metadata: { name, namespace: 'ns' }, spec: { stages } }) as unknown as PromotionFlow;

describe('doctor check delivery', () => {
  it("runs the diagnose of each Environment's delivery method, cluster by cluster of a fleet, with the Applications there and the flow stages into it", async () => {
    const seen: Array<{ env: string; context?: string; apps: string[]; stages: string[]; client?: KubeRest }> = [];
    const probe: DeliveryMethod = {
      name: 'probe',
      deliver: async () => undefined,
      async diagnose(c: DiagnoseContext) {
        seen.push({
          env: c.env.metadata.name,
          context: c.env.spec.cluster?.context,
          apps: c.apps.map((a) => a.metadata.name),
          stages: c.stages.map((s) => `${s.flow}:${s.stage.environment}:${s.stage.approvalSource ?? '-'}`),
          client: c.client(),
        });
        return [{ status: 'warn', subject: `Environment ${c.env.metadata.name}`, message: 'probed', fix: 'nothing' }];
      },
    };
    // patch has no diagnose; an unregistered method is the plan's to refuse, not the doctor's.
    const silent: DeliveryMethod = { name: 'patch', deliver: async () => undefined };
    const fleet = env('prod', {
      cluster: undefined,
      delivery: { method: 'probe' as 'patch' },
      clusters: [
        { name: 'p1', cluster: { context: 'ctx-p1' } },
        { name: 'p2', cluster: { context: 'ctx-p2' }, delivery: { method: 'gone' as 'patch' } },
      ],
    } as Partial<Environment['spec']>);
    const apps = [app('cart'), app('report', { workloads: [{ kind: 'CronJob', name: 'r', environments: ['dev'] }] })];
    const p1 = { clusterName: 'ctx-p1' } as KubeRest;
    const flows = [
      flow('shop', [{ environment: 'dev' }, { environment: 'prod', approvalSource: 'pullRequest' }]),
      flow('web', [{ environment: 'prod' }]),
    ];
    const control = {
      get: async (path: string) => ({
        items: path.endsWith('/environments') ? [env('dev'), fleet] : path.endsWith('/promotionflows') ? flows : apps,
      }),
    } as unknown as KubeRest;
    const ctx = {
      control,
      namespace: 'ns',
      clientFor: (context: string) => (context === 'ctx-p1' ? p1 : undefined),
      deliveryMethods: new Map([
        ['probe', probe],
        ['patch', silent],
      ]),
    } as unknown as DoctorContext;

    expect(await deliveryCheck.run(ctx)).toEqual([
      { check: 'delivery', status: 'warn', subject: 'Environment prod', message: 'probed', fix: 'nothing' },
    ]);
    expect(seen).toEqual([
      { env: 'prod', context: 'ctx-p1', apps: ['cart'], stages: ['shop:prod:pullRequest', 'web:prod:-'], client: p1 },
    ]);
    // The cluster as the caller's kubeconfig reaches it.
    expect(seen[0].client).toBe(p1);
  });
});
