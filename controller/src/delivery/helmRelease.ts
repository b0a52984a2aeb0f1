import type { Application, Environment } from '@kpromo/api';
import { HELMRELEASE, resourcePath } from '../kube/paths.js';
import type { KubeRest } from '../kube/rest.js';
import { parseValuesPath, ValuesPathError } from './yamlEdit.js';

/**
 * Nested object for dot paths, e.g. [['image.tag', 'v1']] -> { image: { tag: 'v1' } }. Pure. Paths
 * are checked ({@link parseValuesPath}: no `__proto__`, `constructor`, `prototype`) and the objects
 * have no prototype, so no path can reach Object.prototype. Throws {@link ValuesPathError} naming
 * the field (third tuple element, default `valuesPath`) for a bad path, or for two paths of which one
 * would overwrite the other (e.g. `image` and `image.digest`, or the same path twice).
 */
export function valuesPatch(entries: Array<[path: string, value: string, field?: string]>): Record<string, unknown> {
  const root: Record<string, unknown> = Object.create(null);
  const seen: Array<{ path: string; field: string }> = [];
  for (const [path, value, field = 'valuesPath'] of entries) {
    const parts = parseValuesPath(path, field);
    const clash = seen.find((o) => o.path === path || path.startsWith(`${o.path}.`) || o.path.startsWith(`${path}.`));
    if (clash) {
      throw new ValuesPathError(
        field,
        `${field} "${path}" overlaps ${clash.field} "${clash.path}": one value would overwrite the other`,
      );
    }
    seen.push({ path, field });
    let node = root;
    for (const p of parts.slice(0, -1)) {
      const existing = Object.hasOwn(node, p) ? node[p] : undefined;
      const next = (existing ?? Object.create(null)) as Record<string, unknown>;
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

/**
 * What delivery.method=helmRelease writes into `spec.values`: `[path, value, Environment field]` for
 * the tag (valuesPath, default image.tag) and, with digestPath, the digest. Paths are not checked here.
 */
export function helmValueEntries(env: Environment, tag: string, digest: string): Array<[string, string, string]> {
  const cfg = env.spec.delivery.helmRelease;
  if (!cfg) throw new Error(`Environment ${env.metadata.name}: delivery.helmRelease is not set`);
  const entries: Array<[string, string, string]> = [
    [cfg.valuesPath ?? 'image.tag', tag, 'delivery.helmRelease.valuesPath'],
  ];
  if (cfg.digestPath) entries.push([cfg.digestPath, digest, 'delivery.helmRelease.digestPath']);
  return entries;
}

/**
 * delivery.method=helmRelease: merge-patch spec.values at valuesPath (tag) and digestPath (digest).
 * Throws {@link ValuesPathError} (before any request) for a bad path.
 */
export async function patchHelmReleaseValues(
  rest: KubeRest,
  env: Environment,
  app: Application,
  tag: string,
  digest: string,
): Promise<string> {
  const name = helmReleaseName(env, app);
  // Checked before any request: a bad path is the Environment's to fix (ValuesPathError).
  const values = valuesPatch(helmValueEntries(env, tag, digest));
  const path = resourcePath(HELMRELEASE, env.spec.namespace, name);
  try {
    await rest.mergePatch(path, { spec: { values } });
  } catch (e) {
    throw new Error(
      `HelmRelease ${env.spec.namespace}/${name} in cluster ${rest.clusterName}: ${(e as Error).message}`,
    );
  }
  return name;
}
