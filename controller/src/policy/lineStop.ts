import type { LineStop } from '@kpromo/api';

/** Where a plan goes: its namespace and target Environment. */
export interface PlanTarget {
  namespace: string;
  environment: string;
}

/**
 * Whether a LineStop reaches plans of every namespace: only `scope: AllNamespaces` in the configured
 * line-stop namespace does. Anywhere else the scope is read as Namespace, so a tenant who may create
 * LineStops in their own namespace cannot stop anyone else's releases.
 */
export function stopsEveryNamespace(stop: LineStop, lineStopNamespace: string | undefined): boolean {
  return stop.spec.scope === 'AllNamespaces' && !!lineStopNamespace && stop.metadata.namespace === lineStopNamespace;
}

/**
 * Pure: the LineStops that hold a plan into `target`, oldest first (the first one is the one the
 * plan reports). A LineStop being deleted has been lifted.
 */
export function stopsHolding(
  stops: readonly LineStop[],
  target: PlanTarget,
  lineStopNamespace: string | undefined,
): LineStop[] {
  return stops
    .filter(
      (s) =>
        !s.metadata.deletionTimestamp &&
        (s.metadata.namespace === target.namespace || stopsEveryNamespace(s, lineStopNamespace)) &&
        (!s.spec.environments?.length || s.spec.environments.includes(target.environment)),
    )
    .sort(
      (a, b) =>
        (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
        `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`),
    );
}

/** `LineStop <ns>/<name>` as messages name it. */
export const lineStopRef = (s: LineStop) => `LineStop ${s.metadata.namespace}/${s.metadata.name}`;

/** The hold message of a plan stopped by `stop`, naming who stopped the line, why, and the two ways on. */
export function lineStopMessage(stop: LineStop): string {
  const by = stop.spec.stoppedBy ? ` by ${stop.spec.stoppedBy}` : '';
  return `the line is stopped${by} (${lineStopRef(stop)}): ${stop.spec.reason}; it goes on when the LineStop is lifted (kpromo line lift ${stop.metadata.name} -n ${stop.metadata.namespace}), or for a hotfix with an approval by a holder of the override-freeze verb`;
}
