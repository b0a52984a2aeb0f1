import type { Application, Environment, PromotionFlow } from '@kpromo/api';
import type { Workload } from '../src/kube/cacheView.js';

export const dg = (c: string) => `sha256:${c.repeat(64).slice(0, 64)}`;

export function app(
  name: string,
  over: Partial<Application['spec']> = {},
  labels?: Record<string, string>,
): Application {
  return {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace: 'ns', ...(labels ? { labels } : {}) },
    spec: {
      owner: 'team-a',
      image: { repository: `shop/${name}` },
      workloads: [{ kind: 'Deployment', name }],
      ...over,
    },
  };
}

export function env(name: string, over: Partial<Environment['spec']> = {}): Environment {
  return {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'Environment',
    metadata: { name, namespace: 'ns' },
    spec: {
      cluster: { context: name },
      namespace: `app-${name}`,
      registry: { host: `reg-${name}.local:5000`, insecure: true },
      delivery: { method: 'patch' },
      ...over,
    },
  };
}

export function flow(stages: string[], over: Partial<PromotionFlow['spec']> = {}): PromotionFlow {
  return {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionFlow',
    metadata: { name: 'main', namespace: 'ns' },
    spec: { stages: stages.map((environment) => ({ environment })), ...over },
  };
}

export function deployment(
  name: string,
  image: string,
  ready = true,
  extra: Partial<Workload['status']> = {},
): Workload {
  return {
    kind: 'Deployment',
    metadata: { name, generation: 2 },
    spec: { replicas: 2, template: { spec: { containers: [{ name: 'main', image }] } } },
    status: ready
      ? { observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2, ...extra }
      : { observedGeneration: 2, replicas: 3, updatedReplicas: 1, readyReplicas: 2, availableReplicas: 2, ...extra },
  };
}
