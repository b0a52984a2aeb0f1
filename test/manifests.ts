import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';
import { REPO_ROOT } from './cluster/paths.js';
import { waitFor } from './kube.js';

export type Manifest = k8s.KubernetesObject & Record<string, unknown>;

/** Every YAML document of one file (empty documents dropped). */
export function loadYaml(path: string): Manifest[] {
  return parseAllDocuments(readFileSync(path, 'utf8'))
    .map((d) => d.toJS() as Manifest | null)
    .filter((d): d is Manifest => !!d);
}

export function loadYamlDir(dir: string): Array<{ file: string; docs: Manifest[] }> {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => ({ file: f, docs: loadYaml(join(dir, f)) }));
}

export const CRD_DIR = join(REPO_ROOT, 'examples/crds');

/** Server-side apply (force): idempotent and safe when several test files apply the same object. */
export async function applyManifest<T extends k8s.KubernetesObject>(
  kc: k8s.KubeConfig,
  obj: T,
  fieldManager = 'kpromo-test',
): Promise<T> {
  const client = k8s.KubernetesObjectApi.makeApiClient(kc);
  // client-node serializes built-in kinds through its generated models, which silently drop
  // wire-named keys such as `x-kubernetes-validations` or `default` unless the object was first
  // deserialized into the model (what its own YAML loader does).
  const typed = k8s.loadYaml<T>(stringify(obj));
  return client.patch(typed, undefined, undefined, fieldManager, true, k8s.PatchStrategy.ServerSideApply);
}

/** Applies the generated kpromo CRDs and waits until the apiserver serves them. */
export async function applyCrds(kc: k8s.KubeConfig): Promise<void> {
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const crds = loadYamlDir(CRD_DIR).flatMap((f) => f.docs);
  for (const crd of crds) await applyManifest(kc, crd);
  for (const crd of crds) {
    const name = crd.metadata?.name as string;
    await waitFor(`CRD ${name} Established`, async () => {
      const c = await ext.readCustomResourceDefinition({ name });
      return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
  }
}

export async function ensureNamespace(kc: k8s.KubeConfig, name: string): Promise<void> {
  await applyManifest(kc, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

export async function deleteNamespace(kc: k8s.KubeConfig, name: string): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.deleteNamespace({ name }).catch(() => undefined);
}
