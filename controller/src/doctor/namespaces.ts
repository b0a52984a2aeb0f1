import type { DoctorContext } from './check.js';

/** A Kubernetes LabelSelector (metav1.LabelSelector), as admission bindings carry it. */
export interface LabelSelector {
  matchLabels?: Record<string, string> | null;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] | null }> | null;
}

/**
 * Pure: whether a LabelSelector selects an object with these labels, as the apiserver decides it
 * (an absent or empty selector selects everything; NotIn and DoesNotExist select objects without
 * the key). An operator it does not know selects nothing: the doctor then reports the namespace
 * as left out, rather than passing what it cannot read.
 */
export function selectorMatches(
  sel: LabelSelector | undefined | null,
  labels: Readonly<Record<string, string>>,
): boolean {
  if (!sel) return true;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const values = e.values ?? [];
    const ok =
      e.operator === 'In'
        ? has && values.includes(labels[e.key])
        : e.operator === 'NotIn'
          ? !has || !values.includes(labels[e.key])
          : e.operator === 'Exists'
            ? has
            : e.operator === 'DoesNotExist'
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

interface NamespaceObject {
  metadata: { name: string; labels?: Record<string, string> };
}

/**
 * The namespaces the controller reconciles, with their labels: from the controller config
 * (`--config`) its `namespaces`, or its shard's namespaceSelector, or every namespace when it lists
 * none; without a config, the namespace the doctor was given.
 */
export async function reconciledNamespaces(ctx: DoctorContext): Promise<NamespaceObject[]> {
  const r = ctx.reconciled;
  if (r?.shardSelector)
    return (
      await ctx.control.get<{ items: NamespaceObject[] }>(
        `/api/v1/namespaces?labelSelector=${encodeURIComponent(r.shardSelector)}`,
      )
    ).items;
  if (r && !r.namespaces.length)
    return (await ctx.control.get<{ items: NamespaceObject[] }>('/api/v1/namespaces')).items;
  const names = r?.namespaces.length ? r.namespaces : [ctx.namespace];
  return Promise.all(
    names.map(async (name) => {
      const ns = await ctx.control.getOrUndefined<NamespaceObject>(`/api/v1/namespaces/${encodeURIComponent(name)}`);
      // A namespace not created yet still gets the name label the apiserver will give it.
      return ns ?? { metadata: { name, labels: { 'kubernetes.io/metadata.name': name } } };
    }),
  );
}
