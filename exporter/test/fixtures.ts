import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@kpromo/test-harness';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';

const CRD_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../examples/crds');
export const G = 'promotions.kpromo.dev';
export const V = 'v1alpha1';

const conflict = (e: unknown) => (e as { code?: number }).code === 409;

export async function createIgnoringConflict(p: Promise<unknown>): Promise<void> {
  await p.catch((e) => {
    if (!conflict(e)) throw e;
  });
}

/** Creates the kpromo CRDs (ignoring 409) and waits until they are served. */
export async function ensureKpromoCrds(kc: k8s.KubeConfig): Promise<void> {
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  for (const f of ['applications', 'environments', 'promotionflows', 'promotionplans', 'notifications']) {
    for (const doc of parseAllDocuments(readFileSync(join(CRD_DIR, `${f}.yaml`), 'utf8'))) {
      const crd = doc.toJS() as k8s.V1CustomResourceDefinition;
      await createIgnoringConflict(ext.createCustomResourceDefinition({ body: crd }));
      await waitForEstablished(ext, crd.metadata!.name!);
    }
  }
}

export async function waitForEstablished(ext: k8s.ApiextensionsV1Api, name: string): Promise<void> {
  await waitFor(`CRD ${name} established`, async () => {
    const c = await ext.readCustomResourceDefinition({ name });
    return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
  });
}

export async function ensureNamespace(kc: k8s.KubeConfig, name: string): Promise<void> {
  await createIgnoringConflict(kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name } } }));
}

export async function deleteNamespace(kc: k8s.KubeConfig, name: string): Promise<void> {
  await kc
    .makeApiClient(k8s.CoreV1Api)
    .deleteNamespace({ name })
    .catch(() => undefined);
}

export type Obj = {
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: unknown;
  status?: unknown;
};

/** Thin CRUD over kpromo custom objects in one namespace. */
export function crs(kc: k8s.KubeConfig, namespace: string) {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  const kinds: Record<string, string> = {
    applications: 'Application',
    environments: 'Environment',
    promotionflows: 'PromotionFlow',
    promotionplans: 'PromotionPlan',
  };
  return {
    async create(plural: string, obj: Obj): Promise<void> {
      const body = { apiVersion: `${G}/${V}`, kind: kinds[plural], ...obj, metadata: { ...obj.metadata, namespace } };
      await api.createNamespacedCustomObject({ group: G, version: V, namespace, plural, body });
      if (obj.status) await this.patchStatus(plural, obj.metadata.name, obj.status);
    },
    async patch(plural: string, name: string, patch: Record<string, unknown>): Promise<void> {
      await api.patchNamespacedCustomObject(
        { group: G, version: V, namespace, plural, name, body: patch },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    },
    async patchStatus(plural: string, name: string, status: unknown): Promise<void> {
      await api.patchNamespacedCustomObjectStatus(
        { group: G, version: V, namespace, plural, name, body: { status } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    },
    async delete(plural: string, name: string): Promise<void> {
      await api.deleteNamespacedCustomObject({ group: G, version: V, namespace, plural, name });
    },
    async list(plural: string): Promise<unknown[]> {
      const r = (await api.listNamespacedCustomObject({ group: G, version: V, namespace, plural })) as {
        items: unknown[];
      };
      return r.items;
    },
  };
}

export const env = (name: string, tier = 'development'): Obj => ({
  metadata: { name },
  spec: {
    tier,
    cluster: { context: name },
    namespace: 'shop',
    registry: { host: '127.0.0.1:5001', insecure: true },
    delivery: { method: 'patch' },
  },
});

export const app = (name: string, owner = 'team-a', versions: string[] = []): Obj => ({
  metadata: { name },
  spec: { owner, image: { repository: `shop/${name}` }, workloads: [{ kind: 'Deployment', name }] },
  ...(versions.length
    ? { status: { versions: versions.map((e) => ({ environment: e, tag: 'v1.0.0', health: 'Healthy' })) } }
    : {}),
});
