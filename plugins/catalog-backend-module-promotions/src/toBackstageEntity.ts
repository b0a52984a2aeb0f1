import type { Entity } from '@backstage/catalog-model';
import type { EntityOrigin, MappedEntity } from '@kpromo/exporter';

/** Backstage kind and spec.type per Port blueprint; unknown blueprints become Resources. */
export const KIND_BY_BLUEPRINT: Record<string, { kind: 'Component' | 'Resource' | 'System'; type: string }> = {
  kpromoApplication: { kind: 'Component', type: 'service' },
  kpromoEnvironment: { kind: 'Resource', type: 'kpromo-environment' },
  kpromoPromotionFlow: { kind: 'System', type: 'kpromo-promotion-flow' },
  kpromoPromotionPlan: { kind: 'Resource', type: 'kpromo-promotion-plan' },
};

export const ANNOTATION = {
  cluster: 'kpromo.dev/cluster',
  apiVersion: 'kpromo.dev/api-version',
  kind: 'kpromo.dev/kind',
  namespace: 'kpromo.dev/namespace',
  name: 'kpromo.dev/name',
  portIdentifier: 'kpromo.dev/port-identifier',
  /** Environments: the clusters it promotes to, comma-separated (a one-cluster Environment: its own name). */
  clusters: 'kpromo.dev/clusters',
  /** Environments: how many clusters (1 for a one-cluster Environment). */
  clusterCount: 'kpromo.dev/cluster-count',
  /** Fleet plans: each wave in order, `<wave>: <phase> <succeeded>/<clusters>[, <n> failed]`, joined by `; `. */
  waves: 'kpromo.dev/waves',
  /** Fleet plans: the first wave not final yet (absent once every wave is). */
  currentWave: 'kpromo.dev/current-wave',
  /** Plans through a pull request: `#12 merged, merged by carol as <commit>` (or `not opened yet`). */
  pullRequestState: 'kpromo.dev/pull-request-state',
  /** Plans through a pull request: each review, whether it counts and why not, joined by `; `. */
  pullRequestReviews: 'kpromo.dev/pull-request-reviews',
} as const;

/**
 * How CRs are named in the catalog (`kpromo.catalog.entityNames`):
 * - `name` (default): the CR's name in the `default` namespace (`component:default/checkout`),
 *   which is what the promotions backend's default `promotions.entityRef` expects. Two CRs of the
 *   same kind and name (other namespace or cluster) would collide: the first one seen is kept.
 * - `namespace`: the CR's name in a catalog namespace named after its Kubernetes namespace
 *   (`component:shop/checkout`).
 * - `qualified`: `<cluster>.<namespace>.<name>` in `default` (`component:default/dev.shop.checkout`),
 *   unique across clusters.
 */
export type EntityNaming = 'name' | 'namespace' | 'qualified';
export const ENTITY_NAMINGS: readonly EntityNaming[] = ['name', 'namespace', 'qualified'];

export interface MappingOptions {
  naming?: EntityNaming;
  /** Owner of entities whose mapping has no team (environments, flows, plans); a group ref. */
  defaultOwner?: string;
}

/** Owner of kinds without a team when `kpromo.catalog.defaultOwner` is not set. */
export const DEFAULT_OWNER = 'group:default/platform';

const NAME_MAX = 63;

/**
 * A string as a valid Backstage name (`[a-zA-Z0-9]` separated by `-`, `_`, `.`; at most 63): other
 * characters become `.`, and names over 63 characters keep a readable prefix plus a short hash so
 * they stay unique.
 */
export function backstageName(identifier: string): string {
  const n = identifier.replace(/[^A-Za-z0-9._-]+/g, '.').replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  if (n.length <= NAME_MAX) return n;
  let h = 0;
  for (const c of identifier) h = (Math.imul(h, 31) + c.charCodeAt(0)) >>> 0;
  return `${n.slice(0, NAME_MAX - 9).replace(/[^A-Za-z0-9]+$/, '')}-${h.toString(36).padStart(7, '0').slice(0, 8)}`;
}

/** A Kubernetes namespace as a Backstage namespace (`[a-z0-9-]`, at most 63: they already are). */
function backstageNamespace(ns: string | undefined): string {
  const n = (ns ?? 'default')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return n.slice(0, NAME_MAX) || 'default';
}

/** What a CR is called in the catalog: namespace and name, per the naming scheme. */
export function entityName(
  origin: Pick<EntityOrigin, 'cluster' | 'namespace' | 'name'>,
  naming: EntityNaming = 'name',
): { namespace: string; name: string } {
  switch (naming) {
    case 'namespace':
      return { namespace: backstageNamespace(origin.namespace), name: backstageName(origin.name) };
    case 'qualified':
      return {
        namespace: 'default',
        name: backstageName([origin.cluster, origin.namespace, origin.name].filter(Boolean).join(':')),
      };
    default:
      return { namespace: 'default', name: backstageName(origin.name) };
  }
}

/**
 * The origin of an entity from its identifier when only the identifier is known (a relation to an
 * entity not seen yet): the default mappings identify CRs as `<cluster>:<namespace>:<name>`.
 */
export function originOfIdentifier(identifier: string): Pick<EntityOrigin, 'cluster' | 'namespace' | 'name'> {
  const parts = identifier.split(':');
  if (parts.length === 3) return { cluster: parts[0], namespace: parts[1], name: parts[2] };
  return { cluster: '', name: identifier };
}

/** A team from the mapping as an owner ref: plain team names are groups in the `default` namespace. */
export function ownerRef(team: string): string {
  if (/^[a-z]+:/i.test(team)) return team;
  return `group:default/${backstageName(team)}`;
}

const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/**
 * Pure: the fleet state of an exported Environment or PromotionPlan as string annotations, read from
 * the properties the default mappings give them (`clusters`, `clusterCount`; `waves`, `currentWave`).
 * Anything absent or of another shape (a custom mapping) is left out; a plan without waves gets none.
 */
export function fleetAnnotations(m: MappedEntity): Record<string, string> {
  const p = m.entity.properties;
  const out: Record<string, string> = {};
  if (m.blueprint === 'kpromoEnvironment') {
    if (isStrings(p.clusters) && p.clusters.length) out[ANNOTATION.clusters] = p.clusters.join(',');
    if (typeof p.clusterCount === 'number') out[ANNOTATION.clusterCount] = String(p.clusterCount);
  } else if (m.blueprint === 'kpromoPromotionPlan') {
    const waves = Array.isArray(p.waves)
      ? p.waves.filter(
          (w): w is Record<string, unknown> & { name: string; phase: string } =>
            !!w && typeof w === 'object' && typeof w.name === 'string' && typeof w.phase === 'string',
        )
      : [];
    if (waves.length)
      out[ANNOTATION.waves] = waves
        .map((w) => {
          const failed = count(w.failed);
          const of = isStrings(w.clusters) ? w.clusters.length : 0;
          return `${w.name}: ${w.phase} ${count(w.succeeded)}/${of}${failed ? `, ${failed} failed` : ''}`;
        })
        .join('; ');
    if (typeof p.currentWave === 'string' && p.currentWave) out[ANNOTATION.currentWave] = p.currentWave;
  }
  return out;
}

/**
 * Pure: the pull request a plan promotes through, from the properties the default mapping gives it
 * (`pullRequest`, `pullRequestState`, `pullRequestReviews`): its state and reviews as annotations,
 * and a link to it (metadata.links) only when the property is an http(s) URL. Anything absent or of
 * another shape (a custom mapping) is left out.
 */
export function pullRequestMetadata(m: MappedEntity): {
  annotations: Record<string, string>;
  links: Array<{ url: string; title: string }>;
} {
  const p = m.entity.properties;
  const annotations: Record<string, string> = {};
  if (m.blueprint !== 'kpromoPromotionPlan') return { annotations, links: [] };
  if (typeof p.pullRequestState === 'string' && p.pullRequestState)
    annotations[ANNOTATION.pullRequestState] = p.pullRequestState;
  if (typeof p.pullRequestReviews === 'string' && p.pullRequestReviews)
    annotations[ANNOTATION.pullRequestReviews] = p.pullRequestReviews;
  const url = typeof p.pullRequest === 'string' ? httpUrl(p.pullRequest) : undefined;
  return { annotations, links: url ? [{ url, title: 'Pull request' }] : [] };
}

/** An http(s) URL without credentials, or undefined: a link from cluster data is never another scheme. */
function httpUrl(value: string): string | undefined {
  try {
    const u = new URL(value);
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.hostname && !u.username && !u.password
      ? u.href
      : undefined;
  } catch {
    return undefined;
  }
}

function refsOf(m: MappedEntity, target: (identifier: string) => string): string[] {
  const out: string[] = [];
  for (const v of Object.values(m.entity.relations)) {
    for (const id of v == null ? [] : Array.isArray(v) ? v : [v]) out.push(target(id));
  }
  return out;
}

/**
 * Pure mapping from an exported entity (+ the CR it came from) to a Backstage catalog entity.
 * `relationRef` turns the identifier of a related entity into its entity ref.
 */
export function toBackstageEntity(
  m: MappedEntity,
  origin: EntityOrigin,
  providerName: string,
  relationRef: (identifier: string) => string,
  options: MappingOptions = {},
): Entity {
  const { kind, type } = KIND_BY_BLUEPRINT[m.blueprint] ?? { kind: 'Resource', type: m.blueprint };
  const team =
    typeof m.entity.team === 'string'
      ? m.entity.team
      : Array.isArray(m.entity.team) && m.entity.team[0]
        ? m.entity.team[0]
        : undefined;
  const owner = team ? ownerRef(team) : (options.defaultOwner ?? DEFAULT_OWNER);
  const pr = pullRequestMetadata(m);
  const location = `kpromo:${origin.cluster}/${origin.apiVersion}/${origin.kind}/${origin.namespace ?? '-'}/${origin.name}`;
  const annotations: Record<string, string> = {
    'backstage.io/managed-by-location': location,
    'backstage.io/managed-by-origin-location': location,
    [ANNOTATION.cluster]: origin.cluster,
    [ANNOTATION.apiVersion]: origin.apiVersion,
    [ANNOTATION.kind]: origin.kind,
    [ANNOTATION.name]: origin.name,
    [ANNOTATION.portIdentifier]: m.entity.identifier,
    // Backstage's Kubernetes plugin finds workloads labelled backstage.io/kubernetes-id=<id>.
    'backstage.io/kubernetes-id': origin.name,
    ...fleetAnnotations(m),
    ...pr.annotations,
  };
  if (origin.namespace) {
    annotations[ANNOTATION.namespace] = origin.namespace;
    annotations['backstage.io/kubernetes-namespace'] = origin.namespace;
  }
  const spec: Record<string, string | string[]> = { type, owner };
  if (kind === 'Component') spec.lifecycle = 'production';
  const dependsOn = refsOf(m, relationRef);
  if (dependsOn.length && kind !== 'System') spec.dependsOn = [...new Set(dependsOn)];
  const { namespace, name } = entityName(origin, options.naming);
  return {
    apiVersion: 'backstage.io/v1alpha1',
    kind,
    metadata: {
      name,
      namespace,
      title: m.entity.title,
      ...(kind === 'Resource' && type === 'kpromo-environment'
        ? { description: `kpromo Environment ${origin.name} (namespace ${origin.namespace ?? '-'})` }
        : {}),
      annotations,
      ...(pr.links.length ? { links: pr.links } : {}),
      labels: { 'kpromo.dev/provider': providerName.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 63) },
    },
    spec,
  };
}
