import type { Application, Environment } from '@kpromo/api';
import { workloadsFor } from '../candidates/runningVersion.js';
import type { AccessNeed } from '../extension/deliveryMethod.js';
import type { ControllerExtensions } from '../extension/plugin.js';
import type { KubeRest } from '../kube/rest.js';

export type { AccessNeed } from '../extension/deliveryMethod.js';

/** What the controller may not do in an Environment's cluster; `checkedAt` ms. */
export interface DeliveryAccess {
  missing: AccessNeed[];
  /** Why it could not be checked (then `missing` is empty). */
  error?: string;
  checkedAt: number;
}

/** The registries the needs come from: the Environment's delivery method, and the kinds of its workloads. */
export type DeliveryRegistry = Pick<ControllerExtensions, 'deliveryMethods' | 'workloadKinds'>;

export const describeNeed = (n: AccessNeed) =>
  `${n.verb} ${n.group ? `${n.resource}.${n.group}` : n.resource} in namespace ${n.namespace}`;

/**
 * Pure: the verbs the controller's identity needs in the Environment's cluster to deliver its
 * Applications there: what its delivery method's `accessNeeds` says, given the registered workload
 * kinds its Applications name for it (sorted by kind). A method without `accessNeeds`, or one that
 * is not registered, needs nothing checked.
 */
export function deliveryNeeds(env: Environment, apps: readonly Application[], r: DeliveryRegistry): AccessNeed[] {
  const method = r.deliveryMethods.get(env.spec.delivery.method);
  if (!method?.accessNeeds) return [];
  const used = new Set(apps.flatMap((a) => workloadsFor(a, env.metadata.name).map((w) => w.kind)));
  const workloadKinds = [...used].sort().flatMap((k) => {
    const kind = r.workloadKinds.get(k);
    return kind ? [kind] : [];
  });
  return [...method.accessNeeds({ env, workloadKinds })];
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
    private readonly registry: DeliveryRegistry,
    private readonly now: () => number = Date.now,
  ) {}

  private static id = (namespace: string | undefined, name: string) => `${namespace}/${name}`;

  get(env: Environment): DeliveryAccess | undefined {
    return this.known.get(DeliveryAccessTracker.id(env.metadata.namespace, env.metadata.name))?.access;
  }

  /** Asks again when the needs or the cluster changed, or the last answer is old. */
  async refresh(env: Environment, apps: readonly Application[]): Promise<void> {
    const needs = deliveryNeeds(env, apps, this.registry);
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
