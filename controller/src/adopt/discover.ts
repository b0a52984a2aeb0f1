import {
  CRONJOB,
  DAEMONSET,
  DEPLOYMENT,
  GITREPOSITORY,
  HELMRELEASE,
  IMAGEPOLICY,
  IMAGEREPOSITORY,
  JOB,
  KUSTOMIZATION,
  type ResourceType,
  ROLLOUT,
  resourcePath,
  STATEFULSET,
} from '../kube/paths.js';
import { isNotFound, KubeError, type KubeRest } from '../kube/rest.js';
import type {
  AdoptKind,
  FoundEnvironment,
  FoundImagePolicy,
  FoundKustomization,
  FoundWorkload,
  UnreadReference,
} from './propose.js';

interface Obj {
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    ownerReferences?: Array<{ kind: string; name: string; controller?: boolean }>;
  };
  spec?: Record<string, unknown>;
}
type PodSpec = { containers?: Array<{ name: string; image?: string }> };

const WORKLOADS: Array<[AdoptKind, ResourceType, (s: Record<string, unknown>) => PodSpec | undefined]> = [
  ['Deployment', DEPLOYMENT, (s) => (s.template as { spec?: PodSpec })?.spec],
  ['StatefulSet', STATEFULSET, (s) => (s.template as { spec?: PodSpec })?.spec],
  ['DaemonSet', DAEMONSET, (s) => (s.template as { spec?: PodSpec })?.spec],
  ['Rollout', ROLLOUT, (s) => (s.template as { spec?: PodSpec })?.spec],
  ['CronJob', CRONJOB, (s) => (s.jobTemplate as { spec?: { template?: { spec?: PodSpec } } })?.spec?.template?.spec],
  ['Job', JOB, (s) => (s.template as { spec?: PodSpec })?.spec],
];

/** Lists a kind; an uninstalled CRD (404) is an empty list, the caller's notes say so. */
async function list(rest: KubeRest, t: ResourceType, namespace?: string): Promise<Obj[] | undefined> {
  try {
    return (await rest.get<{ items: Obj[] }>(resourcePath(t, namespace))).items;
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/**
 * How far discovery reads besides the workloads and HelmReleases of the environment's namespace.
 * `caller` (kpromo adopt, with the person's own kubeconfig): the Kustomizations and GitRepositories
 * the workloads' labels name wherever they are, and ImagePolicies in every namespace the caller may
 * list, as their RBAC allows. `namespace` (POST /adopt, MCP propose_adoption: the controller's
 * identity, which reads more than the caller may): only the environment's namespace, the one its
 * Environment is granted and the caller is shown; references elsewhere are reported as unread.
 */
export type DiscoveryScope = 'caller' | 'namespace';

/**
 * Reads what runs in one namespace of one cluster: workloads of every kind kpromo judges, the Flux
 * HelmReleases there, the Kustomizations and GitRepositories that apply them, and the ImagePolicies
 * scanning images, as far as `scope` allows. Kinds whose CRD is not installed are skipped; a
 * forbidden list fails with the apiserver's message (what to grant).
 */
export async function discoverEnvironment(
  rest: KubeRest,
  env: { name: string; context: string; namespace: string },
  scope: DiscoveryScope = 'caller',
): Promise<FoundEnvironment> {
  const workloads: FoundWorkload[] = [];
  for (const [kind, type, podSpec] of WORKLOADS) {
    for (const o of (await list(rest, type, env.namespace)) ?? []) {
      const owner = o.metadata.ownerReferences?.find((r) => r.controller);
      workloads.push({
        kind,
        name: o.metadata.name,
        labels: o.metadata.labels ?? {},
        containers: (podSpec(o.spec ?? {})?.containers ?? []).flatMap((c) =>
          c.image ? [{ name: c.name, image: c.image }] : [],
        ),
        ...(owner ? { ownedBy: `${owner.kind}/${owner.name}` } : {}),
      });
    }
  }
  const helmReleases = ((await list(rest, HELMRELEASE, env.namespace)) ?? []).map((h) => ({
    name: h.metadata.name,
    values: h.spec?.values ?? {},
  }));
  const unread: UnreadReference[] = [];
  // Labels and references are the workloads' owners' to write: with scope namespace they never
  // make discovery read another namespace.
  const readable = (kind: UnreadReference['kind'], namespace: string, name: string, by: string) => {
    if (scope === 'caller' || namespace === env.namespace) return true;
    if (!unread.some((u) => u.kind === kind && u.namespace === namespace && u.name === name))
      unread.push({ kind, namespace, name, by });
    return false;
  };
  // Kustomizations named by the workloads' labels, and the git source each applies.
  const kustomizations: FoundKustomization[] = [];
  const named = new Set(
    workloads
      .filter((w) => w.labels['kustomize.toolkit.fluxcd.io/name'])
      .map(
        (w) =>
          `${w.labels['kustomize.toolkit.fluxcd.io/namespace'] ?? 'flux-system'}/${w.labels['kustomize.toolkit.fluxcd.io/name']}`,
      ),
  );
  for (const key of named) {
    const [ns, name] = key.split('/');
    if (!readable('Kustomization', ns, name, 'workload labels')) continue;
    const ks = await rest.getOrUndefined<Obj>(resourcePath(KUSTOMIZATION, ns, name)).catch(() => undefined);
    const src = ks?.spec?.sourceRef as { kind?: string; name?: string; namespace?: string } | undefined;
    const repo =
      src?.kind === 'GitRepository' &&
      src.name &&
      readable('GitRepository', src.namespace ?? ns, src.name, `Kustomization ${ns}/${name}`)
        ? await rest
            .getOrUndefined<Obj>(resourcePath(GITREPOSITORY, src.namespace ?? ns, src.name))
            .catch(() => undefined)
        : undefined;
    const url = repo?.spec?.url as string | undefined;
    const branch = (repo?.spec?.ref as { branch?: string } | undefined)?.branch;
    kustomizations.push({
      name,
      namespace: ns,
      ...(typeof ks?.spec?.path === 'string' ? { path: ks.spec.path } : {}),
      ...(url ? { git: { url, ...(branch ? { branch } : {}) } } : {}),
    });
  }
  // ImagePolicies scanning images: in every namespace the caller may list, or only this one.
  const imagePolicies: FoundImagePolicy[] = [];
  const policies = await list(rest, IMAGEPOLICY, scope === 'namespace' ? env.namespace : undefined).catch((e) => {
    if (e instanceof KubeError && e.status === 403) return undefined;
    throw e;
  });
  for (const p of policies ?? []) {
    const ref = p.spec?.imageRepositoryRef as { name?: string; namespace?: string } | undefined;
    const ns = ref?.namespace ?? p.metadata.namespace!;
    const ir =
      ref?.name && readable('ImageRepository', ns, ref.name, `ImagePolicy ${p.metadata.namespace}/${p.metadata.name}`)
        ? await rest.getOrUndefined<Obj>(resourcePath(IMAGEREPOSITORY, ns, ref.name)).catch(() => undefined)
        : undefined;
    imagePolicies.push({
      name: p.metadata.name,
      namespace: p.metadata.namespace!,
      ...(typeof ir?.spec?.image === 'string' ? { image: ir.spec.image } : {}),
    });
  }
  return { ...env, workloads, helmReleases, kustomizations, imagePolicies, ...(unread.length ? { unread } : {}) };
}
