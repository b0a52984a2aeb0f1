import { GROUP, type KpromoKind, RESOURCES, VERSION } from '@kpromo/api';

/** REST paths for the resources the controller touches. */
export interface ResourceType {
  group: string; // '' for core
  version: string;
  plural: string;
  kind: string;
}

export const KPROMO_TYPES: Record<KpromoKind, ResourceType> = Object.fromEntries(
  Object.values(RESOURCES).map((d) => [d.kind, { group: GROUP, version: VERSION, plural: d.plural, kind: d.kind }]),
) as Record<KpromoKind, ResourceType>;

export const DEPLOYMENT: ResourceType = { group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment' };
export const STATEFULSET: ResourceType = { group: 'apps', version: 'v1', plural: 'statefulsets', kind: 'StatefulSet' };
export const DAEMONSET: ResourceType = { group: 'apps', version: 'v1', plural: 'daemonsets', kind: 'DaemonSet' };
export const CRONJOB: ResourceType = { group: 'batch', version: 'v1', plural: 'cronjobs', kind: 'CronJob' };
export const JOB: ResourceType = { group: 'batch', version: 'v1', plural: 'jobs', kind: 'Job' };
/** Argo Rollouts' Rollout (a CRD: watched only where it is served). */
export const ROLLOUT: ResourceType = { group: 'argoproj.io', version: 'v1alpha1', plural: 'rollouts', kind: 'Rollout' };
export const HELMRELEASE: ResourceType = {
  group: 'helm.toolkit.fluxcd.io',
  version: 'v2',
  plural: 'helmreleases',
  kind: 'HelmRelease',
};
/** Flux image-reflector-controller's ImagePolicy and ImageRepository (delivery.method imagePolicy). */
export const IMAGEPOLICY: ResourceType = {
  group: 'image.toolkit.fluxcd.io',
  version: 'v1',
  plural: 'imagepolicies',
  kind: 'ImagePolicy',
};
export const IMAGEREPOSITORY: ResourceType = {
  group: 'image.toolkit.fluxcd.io',
  version: 'v1',
  plural: 'imagerepositories',
  kind: 'ImageRepository',
};
/** Flux kustomize-controller's Kustomization and source-controller's GitRepository (delivery.method git). */
export const KUSTOMIZATION: ResourceType = {
  group: 'kustomize.toolkit.fluxcd.io',
  version: 'v1',
  plural: 'kustomizations',
  kind: 'Kustomization',
};
export const GITREPOSITORY: ResourceType = {
  group: 'source.toolkit.fluxcd.io',
  version: 'v1',
  plural: 'gitrepositories',
  kind: 'GitRepository',
};
export const LEASE: ResourceType = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease' };
export const EVENT: ResourceType = { group: '', version: 'v1', plural: 'events', kind: 'Event' };
export const SECRET: ResourceType = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret' };
export const POD: ResourceType = { group: '', version: 'v1', plural: 'pods', kind: 'Pod' };

export function resourcePath(t: ResourceType, namespace?: string, name?: string, sub?: string): string {
  const base = t.group ? `/apis/${t.group}/${t.version}` : `/api/${t.version}`;
  let p = namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${t.plural}` : `${base}/${t.plural}`;
  if (name) p += `/${encodeURIComponent(name)}`;
  if (sub) p += `/${sub}`;
  return p;
}

export function apiVersionOf(t: ResourceType): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}
