// A fleet plan (a plan into an Environment over many clusters) as the portal shows it: its waves
// (the read model's, PlanProgress.waves) and each application in each cluster (status.targets, which
// the read model leaves out), grouped by wave. Pure, so the plan view and its tests share it.
import type { AppPhase, AppProgress, PlanProgress, PromotionPlan } from './types';

/** App phases while the controller works on an app (copy, write, roll-out, verification). */
export const IN_FLIGHT_PHASES: ReadonlySet<string> = new Set(['Copying', 'Writing', 'RollingOut', 'Verifying']);

/** What someone following a fleet plan looks at first: a failure, or an app still in flight. */
export const isProblemPhase = (phase: string | undefined): boolean =>
  phase === 'Failed' || (!!phase && IN_FLIGHT_PHASES.has(phase));

/** Whether the plan runs (or ran) wave by wave over a fleet; plans into one cluster have no waves. */
export const isFleetPlan = (progress: Pick<PlanProgress, 'waves'>): boolean => progress.waves.length > 0;

/** One application in one cluster. */
export interface FleetCell {
  application: string;
  cluster: string;
  wave: string;
  phase: AppPhase;
  /** The cluster's progress of the app; absent until the controller starts the app there. */
  progress?: AppProgress;
}

/** Applications × clusters of a fleet plan, the clusters grouped by wave in wave order. */
export interface FleetGrid {
  waves: Array<{ name: string; clusters: string[] }>;
  applications: string[];
  /** Every cluster, in wave order. */
  clusters: string[];
  cell(application: string, cluster: string): FleetCell;
  failed: number;
  inFlight: number;
}

const key = (application: string, cluster: string) => `${application}\u0000${cluster}`;

/**
 * The grid of a fleet plan: `applications` (the plan's, in its order; apps only its clusters list
 * are added) by every cluster of its waves (`model.waves`, the read model's). A cluster the
 * controller has not started yet shows its apps Pending; a cluster listed in status.targets but in
 * no wave is added to its target's wave.
 */
export function fleetGrid(
  plan: PromotionPlan,
  model: Pick<PlanProgress, 'waves'>,
  applications: readonly string[] = [],
): FleetGrid {
  const targets = plan.status?.targets ?? [];
  const waves = model.waves.map((w) => ({ name: w.name, clusters: [...w.clusters] }));
  const placed = new Set(waves.flatMap((w) => w.clusters));
  for (const t of targets) {
    if (placed.has(t.cluster)) continue;
    placed.add(t.cluster);
    const w = waves.find((x) => x.name === t.wave);
    if (w) w.clusters.push(t.cluster);
    else waves.push({ name: t.wave, clusters: [t.cluster] });
  }
  const waveOf = new Map(waves.flatMap((w) => w.clusters.map((c) => [c, w.name] as const)));
  const apps = [...applications];
  const known = new Set(apps);
  const progress = new Map<string, AppProgress>();
  for (const t of targets)
    for (const a of t.apps) {
      progress.set(key(a.application, t.cluster), a);
      if (!known.has(a.application)) {
        known.add(a.application);
        apps.push(a.application);
      }
    }
  const clusters = waves.flatMap((w) => w.clusters);
  let failed = 0;
  let inFlight = 0;
  for (const p of progress.values()) {
    if (p.phase === 'Failed') failed++;
    else if (IN_FLIGHT_PHASES.has(p.phase)) inFlight++;
  }
  return {
    waves,
    applications: apps,
    clusters,
    failed,
    inFlight,
    cell(application, cluster) {
      const p = progress.get(key(application, cluster));
      return {
        application,
        cluster,
        wave: waveOf.get(cluster) ?? '',
        phase: p?.phase ?? 'Pending',
        ...(p ? { progress: p } : {}),
      };
    },
  };
}

/** The grid cut down to what needs attention: the applications and clusters with a failed or in-flight cell. */
export function problemsOnly(grid: FleetGrid): FleetGrid {
  const problem = (a: string, c: string) => isProblemPhase(grid.cell(a, c).phase);
  const applications = grid.applications.filter((a) => grid.clusters.some((c) => problem(a, c)));
  const waves = grid.waves
    .map((w) => ({ name: w.name, clusters: w.clusters.filter((c) => applications.some((a) => problem(a, c))) }))
    .filter((w) => w.clusters.length);
  return { ...grid, waves, applications, clusters: waves.flatMap((w) => w.clusters) };
}

/** What a screen reader says for a cell: "web in prod-eu-1: Succeeded". */
export const cellLabel = (c: FleetCell): string => `${c.application} in ${c.cluster}: ${c.phase}`;

/** What a hover shows: the label, the wave, and for a failure why (reason and message). */
export function cellTitle(c: FleetCell, readable: (message: string) => string = (m) => m): string {
  const p = c.progress;
  const why = [p?.reason, p?.message ? readable(p.message) : undefined].filter(Boolean).join(': ');
  return `${cellLabel(c)}${why ? ` – ${why}` : ''} (wave ${c.wave})`;
}
