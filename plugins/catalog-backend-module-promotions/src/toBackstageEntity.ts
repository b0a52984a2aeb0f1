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
} as const;

const NAME_MAX = 63;

/**
 * Port identifiers (`cluster:namespace:name`) as Backstage names: `:` becomes `.`, and names over
 * 63 characters keep a readable prefix plus a short hash so they stay unique.
 */
export function backstageName(identifier: string): string {
  const n = identifier.replace(/[^A-Za-z0-9._-]+/g, '.').replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  if (n.length <= NAME_MAX) return n;
  let h = 0;
  for (const c of identifier) h = (Math.imul(h, 31) + c.charCodeAt(0)) >>> 0;
  return `${n.slice(0, NAME_MAX - 9).replace(/[^A-Za-z0-9]+$/, '')}-${h.toString(36).padStart(7, '0').slice(0, 8)}`;
}

function refsOf(m: MappedEntity, target: (bp: string) => string): string[] {
  const out: string[] = [];
  for (const v of Object.values(m.entity.relations)) {
    for (const id of v == null ? [] : Array.isArray(v) ? v : [v]) out.push(target(id));
  }
  return out;
}

/** Pure mapping from an exported entity (+ the CR it came from) to a Backstage catalog entity. */
export function toBackstageEntity(
  m: MappedEntity,
  origin: EntityOrigin,
  providerName: string,
  relationKinds: (identifier: string) => string,
): Entity {
  const { kind, type } = KIND_BY_BLUEPRINT[m.blueprint] ?? { kind: 'Resource', type: m.blueprint };
  const owner =
    typeof m.entity.team === 'string'
      ? m.entity.team
      : Array.isArray(m.entity.team) && m.entity.team[0]
        ? m.entity.team[0]
        : 'unknown';
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
  };
  if (origin.namespace) {
    annotations[ANNOTATION.namespace] = origin.namespace;
    annotations['backstage.io/kubernetes-namespace'] = origin.namespace;
  }
  const spec: Record<string, string | string[]> = { type, owner };
  if (kind === 'Component') spec.lifecycle = 'production';
  const dependsOn = refsOf(m, relationKinds);
  if (dependsOn.length && kind !== 'System') spec.dependsOn = [...new Set(dependsOn)];
  return {
    apiVersion: 'backstage.io/v1alpha1',
    kind,
    metadata: {
      name: backstageName(m.entity.identifier),
      namespace: 'default',
      title: m.entity.title,
      annotations,
      labels: { 'kpromo.dev/provider': providerName.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 63) },
    },
    spec,
  };
}
