import type { KubeObject, WorkloadKind } from '../extension/workloadKind.js';
import type { Workload } from '../kube/cacheView.js';
import type { CachedWorkloadKind } from '../kube/liveCache.js';

// What the built-in kinds add to the WorkloadKind contract (extension/workloadKind.ts): the informers
// watch them. And the pod-template helpers the rollout checks and `delivery.method: patch` share.

/**
 * A built-in kind, watched by the controller's informers (handed to the cache as a
 * CachedWorkloadKind): what they keep of each object is its own.
 */
export interface WatchedWorkloadKind extends WorkloadKind, CachedWorkloadKind {
  /** What the cache keeps of an object: every field `containers`, `ready` and the rollout checks read. */
  slim(obj: Workload): Workload;
}

/** A built-in, watched kind whose objects have their own shape `W`. */
export const defineWatchedKind = <W extends KubeObject>(
  kind: WorkloadKind<W> & { slim(obj: W): W },
): WatchedWorkloadKind => kind as unknown as WatchedWorkloadKind;

export const DEFAULT_POD_TEMPLATE: readonly string[] = ['spec', 'template'];

/** The value at `path` of an object (undefined where a step is missing). */
export function at(obj: unknown, path: readonly string[]): unknown {
  let cur = obj;
  for (const k of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

/** The containers of an object's pod template, by the kind's `containers` or its {@link WorkloadKind.podTemplate}. */
export function containersOf(
  kind: Pick<WorkloadKind, 'containers' | 'podTemplate'> | undefined,
  obj: Workload,
): ReadonlyArray<{ name: string; image?: string }> {
  if (kind?.containers) return kind.containers(obj) ?? [];
  const c = at(obj, [...(kind?.podTemplate ?? DEFAULT_POD_TEMPLATE), 'spec', 'containers']);
  return Array.isArray(c) ? (c as Array<{ name: string; image?: string }>) : [];
}
