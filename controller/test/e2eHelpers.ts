import type { PromotionPlan } from '@kpromo/api';
import { kubeConfigFor, pushTestImage, waitFor } from '@kpromo/test-harness';
import type { Workload } from '../src/kube/cacheView.js';
import { DEPLOYMENT, KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import { isNotFound, KubeRest } from '../src/kube/rest.js';

export const restFor = (kubeconfig: string, ctx: string) => new KubeRest(kubeConfigFor(ctx, kubeconfig), ctx);

export async function ensureNs(rest: KubeRest, name: string) {
  await rest.apply(
    `/api/v1/namespaces/${name}`,
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
    'ctl-test',
  );
}

export async function deleteNs(rest: KubeRest, name: string) {
  await rest.delete(`/api/v1/namespaces/${name}`).catch((e) => {
    if (!isNotFound(e)) throw e;
  });
}

/** A Deployment kwok makes Ready (tolerates the fake node's taints); `stuck` pins it to no node. */
export async function applyDeployment(
  rest: KubeRest,
  ns: string,
  name: string,
  image: string,
  opts: { stuck?: boolean } = {},
) {
  await rest.apply(
    resourcePath(DEPLOYMENT, ns, name),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: ns },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: {
            tolerations: [{ operator: 'Exists' }],
            ...(opts.stuck ? { nodeSelector: { 'kpromo.dev/nowhere': 'true' } } : {}),
            containers: [{ name: 'main', image }],
          },
        },
      },
    },
    'ctl-test',
  );
}

export async function getDeployment(rest: KubeRest, ns: string, name: string): Promise<Workload> {
  return rest.get<Workload>(resourcePath(DEPLOYMENT, ns, name));
}

export async function waitReady(rest: KubeRest, ns: string, name: string) {
  await waitFor(
    `${rest.clusterName} ${ns}/${name} ready`,
    async () => {
      const d = await getDeployment(rest, ns, name);
      return (
        (d.status?.availableReplicas ?? 0) >= 1 &&
        d.status?.updatedReplicas === 1 &&
        d.status?.observedGeneration === d.metadata.generation
      );
    },
    60_000,
  );
}

export async function applyCr(
  rest: KubeRest,
  obj: { kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown },
) {
  const t = KPROMO_TYPES[obj.kind as keyof typeof KPROMO_TYPES];
  return rest.apply(
    resourcePath(t, obj.metadata.namespace, obj.metadata.name),
    { apiVersion: 'promotions.kpromo.dev/v1alpha1', ...obj },
    'ctl-test',
  );
}

export async function getPlan(rest: KubeRest, ns: string, name: string): Promise<PromotionPlan> {
  return rest.get<PromotionPlan>(resourcePath(KPROMO_TYPES.PromotionPlan, ns, name));
}

export async function waitPlan(
  rest: KubeRest,
  ns: string,
  name: string,
  pred: (p: PromotionPlan) => boolean,
  timeoutMs = 120_000,
  onPoll?: () => Promise<void>,
) {
  return waitFor(
    `plan ${name}`,
    async () => {
      await onPoll?.();
      const p = await getPlan(rest, ns, name);
      return pred(p) ? p : undefined;
    },
    timeoutMs,
  );
}

/** Digest the registry serves for repo:tag (HEAD with manifest Accept headers). */
export async function registryDigest(host: string, repo: string, ref: string): Promise<string | undefined> {
  const res = await fetch(`http://${host}/v2/${repo}/manifests/${ref}`, {
    method: 'HEAD',
    headers: {
      accept: [
        'application/vnd.oci.image.index.v1+json',
        'application/vnd.oci.image.manifest.v1+json',
        'application/vnd.docker.distribution.manifest.v2+json',
        'application/vnd.docker.distribution.manifest.list.v2+json',
      ].join(', '),
    },
  });
  return res.ok ? (res.headers.get('docker-content-digest') ?? undefined) : undefined;
}

export { pushTestImage };

/** Events recorded for an object, by reason. */
export async function eventReasons(rest: KubeRest, ns: string, name: string): Promise<string[]> {
  const l = await rest.get<{ items: Array<{ reason: string; involvedObject: { name: string; kind: string } }> }>(
    `/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name=${name}`,
  );
  return l.items.filter((e) => e.involvedObject.kind === 'PromotionPlan').map((e) => e.reason);
}
