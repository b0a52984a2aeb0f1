import type { Environment } from '@kpromo/api';
import { fleetTargets } from '@kpromo/api';
import { z } from 'zod';

const globList = (what: string) => z.array(z.string().min(1).max(253)).default([]).describe(what);

/**
 * One `clusterAccess` entry of the controller config: Environments in control-cluster namespaces
 * matching `namespaces` may use these kubeconfig contexts, kubeconfig Secrets (by name, in their
 * own namespace) and, when `inCluster`, the controller's own service account, and deliver into the
 * `targetNamespaces` of those clusters (default: only the namespace named like their own). Globs:
 * `*` any run of characters, `?` one character.
 */
export const ClusterAccessRuleSchema = z
  .object({
    namespaces: z
      .array(z.string().min(1).max(253))
      .min(1)
      .describe('Namespaces (globs) of the Environments this entry is for'),
    contexts: globList('Contexts of the controller kubeconfig (globs) they may name in spec.cluster.context'),
    kubeconfigSecrets: globList('Secret names (globs) they may name in spec.cluster.kubeconfigSecretRef'),
    inCluster: z
      .boolean()
      .default(false)
      .describe('May they use spec.cluster.inCluster (the controller service account)'),
    targetNamespaces: globList(
      'Namespaces (globs) of the target cluster that Environments of these control namespaces may deliver to (spec.namespace); empty: only the namespace named like their own control namespace',
    ),
  })
  .strict();

/** Absent or empty: no Environment may reach any cluster (secure default). */
export const ClusterAccessSchema = z.array(ClusterAccessRuleSchema).default([]);

export type ClusterAccessRule = z.infer<typeof ClusterAccessRuleSchema>;

export function globMatch(glob: string, s: string): boolean {
  if (!/[*?]/.test(glob)) return glob === s;
  const re = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`, 's').test(s);
}

/** Reason of the Ready condition of an Environment whose cluster reference is refused. */
export const CLUSTER_NOT_ALLOWED = 'ClusterNotAllowed';

/**
 * Why `env` may not use the cluster it names (undefined when an entry allows it). The message says
 * which controller config key to change.
 */
export function clusterAccessRefusal(rules: readonly ClusterAccessRule[], env: Environment): string | undefined {
  const ns = env.metadata.namespace ?? 'default';
  const ref = `Environment ${ns}/${env.metadata.name}`;
  const c = env.spec.cluster;
  if (!c) {
    // A fleet may use its clusters only when it may use every one of them.
    for (const t of fleetTargets(env)) {
      const r = clusterAccessRefusal(rules, t.env);
      if (r) return `cluster ${t.cluster}: ${r}`;
    }
    return undefined;
  }
  const entries = rules.filter((r) => r.namespaces.some((g) => globMatch(g, ns)));
  let what: string;
  let fix: string;
  let allows: (r: ClusterAccessRule) => boolean;
  if (c.context) {
    const ctx = c.context;
    what = `kubeconfig context "${ctx}"`;
    fix = `add "${ctx}" to clusterAccess[].contexts`;
    allows = (r) => r.contexts.some((g) => globMatch(g, ctx));
  } else if (c.kubeconfigSecretRef) {
    const name = c.kubeconfigSecretRef.name;
    what = `kubeconfig Secret "${name}"`;
    fix = `add "${name}" to clusterAccess[].kubeconfigSecrets`;
    allows = (r) => r.kubeconfigSecrets.some((g) => globMatch(g, name));
  } else {
    what = "the controller's in-cluster service account";
    fix = 'set clusterAccess[].inCluster: true';
    allows = (r) => r.inCluster;
  }
  const forCluster = entries.filter(allows);
  if (!forCluster.length)
    return `${ref} may not use ${what}: the controller config key clusterAccess has no entry allowing namespace ${ns} to; ${fix} of an entry whose namespaces match "${ns}"`;
  // Tenancy: the cluster and the target namespace must be allowed by the same entry, so a team
  // allowed into a shared cluster reaches only its own namespaces there.
  const target = env.spec.namespace;
  if (forCluster.some((r) => targetNamespacesOf(r, ns).some((g) => globMatch(g, target)))) return undefined;
  return `${ref} may not deliver into namespace "${target}" of ${what}: no clusterAccess entry for namespace ${ns} that allows that cluster lists "${target}" in targetNamespaces (without targetNamespaces only "${ns}" is allowed); add "${target}" to clusterAccess[].targetNamespaces of an entry whose namespaces match "${ns}" and that allows ${what}`;
}

/** The target namespaces an entry allows Environments of control namespace `ns`: its list, or `ns` itself. */
export function targetNamespacesOf(rule: ClusterAccessRule, ns: string): readonly string[] {
  return rule.targetNamespaces.length ? rule.targetNamespaces : [ns];
}
