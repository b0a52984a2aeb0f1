import type { Application, Environment } from '@kpromo/api';
import { workloadsFor } from '../candidates/runningVersion.js';
import type { Workload } from '../kube/cacheView.js';
import { DEPLOYMENT, resourcePath, STATEFULSET } from '../kube/paths.js';
import type { KubeRest } from '../kube/rest.js';

export const PLAN_ANNOTATION = 'promotions.kpromo.dev/plan';

/**
 * delivery.method=patch: set the container image of every workload of the app in the
 * Environment namespace. Strategic merge by container name only touches that container;
 * re-applying the same image is a no-op for the rollout (idempotent).
 */
export async function patchWorkloadImage(
  rest: KubeRest,
  env: Environment,
  app: Application,
  image: string,
  plan: string,
): Promise<string[]> {
  const patched: string[] = [];
  for (const ref of workloadsFor(app, env.metadata.name)) {
    const type = ref.kind === 'StatefulSet' ? STATEFULSET : DEPLOYMENT;
    const path = resourcePath(type, env.spec.namespace, ref.name);
    let container = ref.container;
    if (!container) {
      const w = await rest.getOrUndefined<Workload>(path);
      if (!w)
        throw new Error(
          `${type.kind} ${env.spec.namespace}/${ref.name} not found in cluster ${rest.clusterName} (Environment ${env.metadata.name}); create it or fix Application ${app.metadata.name} spec.workloads`,
        );
      container = w.spec?.template?.spec?.containers?.[0]?.name;
      if (!container) throw new Error(`${type.kind} ${env.spec.namespace}/${ref.name} has no containers`);
    }
    await rest.request('PATCH', path, {
      contentType: 'application/strategic-merge-patch+json',
      body: {
        metadata: { annotations: { [PLAN_ANNOTATION]: plan } },
        spec: { template: { spec: { containers: [{ name: container, image }] } } },
      },
      query: { fieldManager: 'kpromo-controller' },
    });
    patched.push(`${type.kind}/${ref.name}`);
  }
  return patched;
}
