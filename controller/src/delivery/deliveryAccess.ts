import type { Application, Environment } from '@kpromo/api';
import { workloadsFor } from '../candidates/runningVersion.js';
import type { WorkloadKinds } from '../extension/plugin.js';
import { HELMRELEASE, IMAGEPOLICY, KUSTOMIZATION } from '../kube/paths.js';

import type { KubeRest } from '../kube/rest.js';

/** One verb the controller's identity needs in an Environment's cluster to deliver there. */
export interface AccessNeed {
  verb: string;
  group: string;
  resource: string;
  namespace: string;
}

/** What the controller may not do in an Environment's cluster; `checkedAt` ms. */
export interface DeliveryAccess {
  missing: AccessNeed[];
  /** Why it could not be checked (then `missing` is empty). */
  error?: string;
  checkedAt: number;
}

export const describeNeed = (n: AccessNeed) =>
  `${n.verb} ${n.group ? `${n.resource}.${n.group}` : n.resource} in namespace ${n.namespace}`;

/**
 * Pure: the verbs the controller's identity needs in the Environment's cluster to deliver its
 * Applications there, by delivery method. `patch`: patch (or, for kinds replaced on change such as
 * Jobs, create and delete) each workload kind its Applications name; `helmRelease`: patch
 * HelmReleases. `git` and `imagePolicy` write nothing in the cluster (Flux does), but their verdict
 * reads the Flux object there: get on the Kustomization or the ImagePolicies, when Flux runs in
 * the Environment's cluster (objects in the control cluster are read with the controller's
 * control-cluster rights, not judged here).
 */
export function deliveryNeeds(env: Environment, apps: readonly Application[], kinds: WorkloadKinds): AccessNeed[] {
  const ns = env.spec.namespace;
  const d = env.spec.delivery;
  const method = d.method;
  if (method === 'helmRelease')
    return [{ verb: 'patch', group: HELMRELEASE.group, resource: HELMRELEASE.plural, namespace: ns }];
  if (method === 'git') {
    const k = d.git?.kustomization;
    return k && (k.cluster ?? 'environment') === 'environment'
      ? [
          {
            verb: 'get',
            group: KUSTOMIZATION.group,
            resource: KUSTOMIZATION.plural,
            namespace: k.namespace ?? 'flux-system',
          },
        ]
      : [];
  }
  if (method === 'imagePolicy') {
    const p = d.imagePolicy;
    return (p?.cluster ?? 'environment') === 'environment'
      ? [
          {
            verb: 'get',
            group: IMAGEPOLICY.group,
            resource: IMAGEPOLICY.plural,
            namespace: p?.namespace ?? 'flux-system',
          },
        ]
      : [];
  }
  if (method !== 'patch') return [];
  const used = new Set(apps.flatMap((a) => workloadsFor(a, env.metadata.name).map((w) => w.kind)));
  const out: AccessNeed[] = [];
  for (const k of [...used].sort()) {
    const kind = kinds.get(k);
    if (!kind?.patch) continue; // a kind that cannot be patched fails the promotion with its own reason
    const { group, plural } = kind.resource;
    const verbs = kind.patch === 'recreate' ? ['create', 'delete'] : ['patch'];
    for (const verb of verbs) out.push({ verb, group, resource: plural, namespace: ns });
  }
  return out;
}

/**
 * Asks the Environment's cluster, as the controller's identity there (SelfSubjectAccessReview),
 * which of `needs` it lacks. Nothing is written.
 */
export async function checkDeliveryAccess(rest: KubeRest, needs: readonly AccessNeed[]): Promise<AccessNeed[]> {
  const answers = await Promise.all(
    needs.map(async (n) => {
      const r = await rest.create<{ status?: { allowed?: boolean } }>(
        '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
        {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SelfSubjectAccessReview',
          spec: { resourceAttributes: { verb: n.verb, group: n.group, resource: n.resource, namespace: n.namespace } },
        },
      );
      return r.status?.allowed === true ? undefined : n;
    }),
  );
  return answers.filter((n): n is AccessNeed => n !== undefined);
}

/** How long an answer is kept before the cluster is asked again (RBAC changes without any event here). */
const RECHECK_MS = 5 * 60_000;

/**
 * The controller's delivery rights per Environment, asked of each cluster when what is needed
 * changes and at most every few minutes otherwise; read synchronously by the Environment status.
 */
export class DeliveryAccessTracker {
  private readonly known = new Map<string, { key: string; access: DeliveryAccess }>();

  constructor(
    private readonly clientFor: (env: Environment) => Promise<KubeRest>,
    private readonly kinds: WorkloadKinds,
    private readonly now: () => number = Date.now,
  ) {}

  private static id = (namespace: string | undefined, name: string) => `${namespace}/${name}`;

  get(env: Environment): DeliveryAccess | undefined {
    return this.known.get(DeliveryAccessTracker.id(env.metadata.namespace, env.metadata.name))?.access;
  }

  /** Asks again when the needs or the cluster changed, or the last answer is old. */
  async refresh(env: Environment, apps: readonly Application[]): Promise<void> {
    const needs = deliveryNeeds(env, apps, this.kinds);
    const key = JSON.stringify([env.spec.cluster, needs]);
    const prev = this.known.get(DeliveryAccessTracker.id(env.metadata.namespace, env.metadata.name));
    if (prev && prev.key === key && this.now() - prev.access.checkedAt < RECHECK_MS) return;
    let access: DeliveryAccess;
    try {
      const missing = needs.length ? await checkDeliveryAccess(await this.clientFor(env), needs) : [];
      access = { missing, checkedAt: this.now() };
    } catch (e) {
      access = { missing: [], error: (e as Error).message.split('\n')[0], checkedAt: this.now() };
    }
    this.known.set(DeliveryAccessTracker.id(env.metadata.namespace, env.metadata.name), { key, access });
  }

  /** An Environment deleted: nothing is kept for it. */
  forget(namespace: string, name: string): void {
    this.known.delete(DeliveryAccessTracker.id(namespace, name));
  }
}
