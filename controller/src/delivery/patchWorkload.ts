import type { Application, Environment } from '@kpromo/api';
import { workloadsFor } from '../candidates/runningVersion.js';
import type { Workload } from '../kube/cacheView.js';
import { DEPLOYMENT, type ResourceType, resourcePath, STATEFULSET } from '../kube/paths.js';
import type { KubeRest } from '../kube/rest.js';

export const PLAN_ANNOTATION = 'promotions.kpromo.dev/plan';

/** The kinds a strategic-merge patch of `spec.template.spec.containers` can update. */
const PATCHABLE = new Map<string, ResourceType>([
  ['Deployment', DEPLOYMENT],
  ['StatefulSet', STATEFULSET],
]);

/** A workload kind (e.g. one a plugin judges) this method cannot patch: the Environment needs another method. */
export class UnpatchableWorkloadError extends Error {
  override name = 'UnsupportedWorkloadKind';
  /** Retrying cannot help (see the plan step runner's error classification). */
  readonly permanent = true;
}

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
  const refs = workloadsFor(app, env.metadata.name);
  // Checked before the first patch, so a mixed list is not left half-patched.
  const other = refs.find((r) => !PATCHABLE.has(r.kind ?? 'Deployment'));
  if (other)
    throw new UnpatchableWorkloadError(
      `${other.kind} ${other.name}: delivery.method patch updates Deployments and StatefulSets only; use a delivery method that handles ${other.kind} (Environment ${env.metadata.name})`,
    );
  for (const ref of refs) {
    const type = PATCHABLE.get(ref.kind ?? 'Deployment')!;
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
