import { type Application, type AppProgress, TERMINAL_APP_PHASES } from '@kpromo/api';

// The order inside a release (Application spec.dependsOn), as pure decisions: which apps of a plan go
// after which, whether their dependsOn form a cycle, and which apps may start now.

/** Per application of a plan: the applications of the same plan that must succeed before it starts. */
export type PlanOrder = ReadonlyMap<string, readonly string[]>;

type DependsOn = Pick<Application, 'spec'>;

/** An app's dependsOn within the plan: one it names that the plan does not release is ignored (it runs some version already). */
const inPlan = (apps: ReadonlyMap<string, DependsOn>, name: string) =>
  (apps.get(name)?.spec.dependsOn ?? []).filter((d) => apps.has(d));

/**
 * Pure: the order of a plan's applications (`apps`, the plan's own). A promotion starts an app after
 * its dependsOn; a rollback the other way round, after the apps that depend on it (they go back
 * first, so nothing ever runs against an older dependency than it was released with).
 */
export function planOrder(apps: ReadonlyMap<string, DependsOn>, rollback: boolean): Map<string, string[]> {
  const order = new Map<string, string[]>([...apps.keys()].map((n) => [n, []]));
  for (const n of apps.keys())
    for (const d of inPlan(apps, n)) {
      if (rollback) order.get(d)!.push(n);
      else order.get(n)!.push(d);
    }
  return order;
}

/**
 * Pure: a cycle among the dependsOn of a plan's applications, as the path that closes it
 * (`['api', 'db', 'api']`), or undefined when they form none. Applications are visited in the
 * plan's order, so the same plan names the same cycle every time.
 */
export function dependsOnCycle(apps: ReadonlyMap<string, DependsOn>): string[] | undefined {
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (n: string): string[] | undefined => {
    const at = path.indexOf(n);
    if (at >= 0) return [...path.slice(at), n];
    if (done.has(n)) return undefined;
    path.push(n);
    for (const d of inPlan(apps, n)) {
      const cycle = visit(d);
      if (cycle) return cycle;
    }
    path.pop();
    done.add(n);
    return undefined;
  };
  for (const n of apps.keys()) {
    const cycle = visit(n);
    if (cycle) return cycle;
  }
  return undefined;
}

/** The refusal of a plan whose applications' dependsOn form `cycle`, the same from every door. */
export function dependsOnCycleMessage(cycle: readonly string[]): string {
  const edges = cycle.slice(0, -1).map((n, i) => `${cycle[i + 1]} from spec.dependsOn of Application ${n}`);
  return `dependsOn cycle: ${cycle.join(' → ')}; remove one edge: ${edges.join(', or ')}`;
}

/**
 * Which apps may start now: in-flight apps (Copying/Writing/RollingOut) hold a slot each; pending
 * apps fill the remaining `concurrency` slots in plan order.
 */
export function appsToWorkOn(apps: readonly AppProgress[], concurrency: number): AppProgress[] {
  const inFlight = apps.filter((a) => !TERMINAL_APP_PHASES.has(a.phase) && a.phase !== 'Pending');
  const free = Math.max(0, concurrency - inFlight.length);
  const starting = apps.filter((a) => a.phase === 'Pending').slice(0, free);
  return [...inFlight, ...starting];
}

export interface OrderDecision {
  /** The apps to advance now: those in flight, then Pending ones free to start, up to the concurrency. */
  work: AppProgress[];
  /** Pending apps that wait for others of the plan to succeed first: per app, those still to succeed. */
  waiting: Map<string, string[]>;
  /**
   * Pending apps that never start: an app they go after failed (or was held itself). Per app, the
   * app whose failure holds it, the first one along the order.
   */
  held: Map<string, string>;
  /** Pending apps free by the order that `blocked` holds (another plan promotes them). */
  blocked: Set<string>;
}

/**
 * Pure: which apps of a plan (or of one cluster of a fleet plan) may start now. A Pending app
 * starts once every app it goes after ({@link planOrder}) succeeded; it waits while one has not
 * finished, and is held for good when one failed, was rolled back or is held itself (the plan's
 * onFailure then applies as to any failed app). `blocked` is asked only for the apps the order lets
 * start. Those left start in plan order within `concurrency`, beside the apps in flight.
 */
export function orderDecisions(
  apps: readonly AppProgress[],
  order: PlanOrder,
  concurrency: number,
  blocked: (application: string) => boolean = () => false,
): OrderDecision {
  const byName = new Map(apps.map((a) => [a.application, a]));
  const waiting = new Map<string, string[]>();
  const held = new Map<string, string>();
  const judged = new Set<string>();
  // An app's hold, judged after the apps it goes after (the order is a DAG: validatePlan refuses cycles).
  const judge = (a: AppProgress): void => {
    if (judged.has(a.application)) return;
    judged.add(a.application);
    if (a.phase !== 'Pending') return;
    const waitsFor: string[] = [];
    for (const d of order.get(a.application) ?? []) {
      const dep = byName.get(d);
      if (!dep) continue;
      judge(dep);
      const by = held.get(d) ?? (dep.phase === 'Failed' || dep.phase === 'RolledBack' ? (dep.heldBy ?? d) : undefined);
      if (by) {
        held.set(a.application, by);
        return;
      }
      if (dep.phase !== 'Succeeded') waitsFor.push(d);
    }
    if (waitsFor.length) waiting.set(a.application, waitsFor);
  };
  for (const a of apps) judge(a);
  const blockedNow = new Set(
    apps
      .filter((a) => a.phase === 'Pending' && !waiting.has(a.application) && !held.has(a.application))
      .map((a) => a.application)
      .filter(blocked),
  );
  const free = apps.filter(
    (a) =>
      a.phase !== 'Pending' ||
      !(waiting.has(a.application) || held.has(a.application) || blockedNow.has(a.application)),
  );
  return { work: appsToWorkOn(free, concurrency), waiting, held, blocked: blockedNow };
}
