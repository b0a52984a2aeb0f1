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
import type { AdoptKind, FoundEnvironment, FoundImagePolicy, FoundKustomization, FoundWorkload } from './propose.js';

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
 * Reads what runs in one namespace of one cluster, as the caller (their kubeconfig, their RBAC):
 * workloads of every kind kpromo judges, the Flux HelmReleases there, the Kustomizations and
 * GitRepositories that apply them, and the ImagePolicies scanning images. Kinds whose CRD is not
 * installed are skipped; a forbidden list fails with the apiserver's message (what to grant).
 */
export async function discoverEnvironment(
  rest: KubeRest,
  env: { name: string; context: string; namespace: string },
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
    const ks = await rest.getOrUndefined<Obj>(resourcePath(KUSTOMIZATION, ns, name)).catch(() => undefined);
    const src = ks?.spec?.sourceRef as { kind?: string; name?: string; namespace?: string } | undefined;
    const repo =
      src?.kind === 'GitRepository' && src.name
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
  // ImagePolicies anywhere in the cluster the caller may list, with the image their ImageRepository scans.
  const imagePolicies: FoundImagePolicy[] = [];
  const policies = await list(rest, IMAGEPOLICY).catch((e) => {
    if (e instanceof KubeError && e.status === 403) return undefined;
    throw e;
  });
  for (const p of policies ?? []) {
    const ref = p.spec?.imageRepositoryRef as { name?: string; namespace?: string } | undefined;
    const ns = ref?.namespace ?? p.metadata.namespace!;
    const ir = ref?.name
      ? await rest.getOrUndefined<Obj>(resourcePath(IMAGEREPOSITORY, ns, ref.name)).catch(() => undefined)
      : undefined;
    imagePolicies.push({
      name: p.metadata.name,
      namespace: p.metadata.namespace!,
      ...(typeof ir?.spec?.image === 'string' ? { image: ir.spec.image } : {}),
    });
  }
  return { ...env, workloads, helmReleases, kustomizations, imagePolicies };
}
