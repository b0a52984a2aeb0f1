import type { Application, Environment } from '@kpromo/api';
import { HELMRELEASE, resourcePath } from '../kube/paths.js';
import type { KubeRest } from '../kube/rest.js';

/** Nested object for a dot path, e.g. ('image.tag', 'v1') -> { image: { tag: 'v1' } }. Pure. */
export function valuesPatch(entries: Array<[path: string, value: string]>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [path, value] of entries) {
    const parts = path.split('.').filter(Boolean);
    if (!parts.length) throw new Error(`empty values path "${path}"`);
    let node = root;
    for (const p of parts.slice(0, -1)) {
      const next = (node[p] as Record<string, unknown> | undefined) ?? {};
      node[p] = next;
      node = next;
    }
    node[parts[parts.length - 1]] = value;
  }
  return root;
}

export function helmReleaseName(env: Environment, app: Application): string {
  return (env.spec.delivery.helmRelease?.name ?? '{app}').replaceAll('{app}', app.metadata.name);
}

/** delivery.method=helmRelease: merge-patch spec.values at valuesPath (tag) and digestPath (digest). */
export async function patchHelmReleaseValues(
  rest: KubeRest,
  env: Environment,
  app: Application,
  tag: string,
  digest: string,
): Promise<string> {
  const cfg = env.spec.delivery.helmRelease;
  if (!cfg) throw new Error(`Environment ${env.metadata.name}: delivery.helmRelease is not set`);
  const name = helmReleaseName(env, app);
  const entries: Array<[string, string]> = [[cfg.valuesPath ?? 'image.tag', tag]];
  if (cfg.digestPath) entries.push([cfg.digestPath, digest]);
  const path = resourcePath(HELMRELEASE, env.spec.namespace, name);
  try {
    await rest.mergePatch(path, { spec: { values: valuesPatch(entries) } });
  } catch (e) {
    throw new Error(
      `HelmRelease ${env.spec.namespace}/${name} in cluster ${rest.clusterName}: ${(e as Error).message}`,
    );
  }
  return name;
}
