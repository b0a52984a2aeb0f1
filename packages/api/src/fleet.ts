import type { FleetCluster } from './resources/environment.js';
import type { Stage, Wave } from './resources/promotionFlow.js';
import type { Environment } from './types.js';

/**
 * Fleets: an Environment with `spec.clusters` is one stage over many clusters. Everything that
 * reads or writes a cluster works on its targets, each a single-cluster view of the Environment
 * (same name, the cluster's ClusterRef, namespace and delivery, the stage's registry), so the code of
 * a one-cluster Environment runs unchanged for each cluster. An Environment with `spec.cluster` is a
 * fleet of one: one target, named after the Environment.
 */
export interface FleetTarget {
  /** The cluster's name in the fleet (the Environment's name for a one-cluster Environment). */
  cluster: string;
  labels: Readonly<Record<string, string>>;
  /** The Environment as this one cluster (spec.cluster set, spec.clusters absent). */
  env: Environment;
}

/** Set on a fleet target's view (never stored): which cluster of the fleet it is. */
export const FLEET_CLUSTER_ANNOTATION = 'promotions.kpromo.dev/fleet-cluster';

/** The fleet cluster a target view stands for; undefined for a stored Environment. */
export const targetCluster = (env: Environment): string | undefined =>
  env.metadata.annotations?.[FLEET_CLUSTER_ANNOTATION];

/** The one wave of a plan that rolls a fleet plan back. */
export const TARGET_WAVE_ROLLBACK = 'rollback';

export const isFleet = (env: Environment): boolean => !!env.spec.clusters?.length;

/**
 * The most application x cluster entries one fleet plan may hold. A plan journals every entry in its
 * status, one object under etcd's 1.5 MiB limit; measured at 20 clusters x 200 apps (4,000 entries):
 * ~60 bytes per finished entry, ~0.4 KiB per app in the per-app sum-up, ~0.25 KiB per candidate, with
 * room left for entries that fail with a message. Larger releases are split into several plans.
 */
export const MAX_FLEET_PLAN_ENTRIES = 10_000;

/** Why a plan of `apps` applications into `env` would not fit one object; undefined when it fits. */
export function fleetPlanTooLarge(apps: number, env: Environment): string | undefined {
  const clusters = env.spec.clusters?.length ?? 1;
  if (apps * clusters <= MAX_FLEET_PLAN_ENTRIES) return undefined;
  return `${apps} application(s) x ${clusters} cluster(s) of Environment ${env.metadata.name} is ${apps * clusters} entries; a plan journals at most ${MAX_FLEET_PLAN_ENTRIES} in its status (one object in etcd): split the applications over several plans`;
}

/** Targets by Environment object: informers replace the object on change, so the views stay stable while it is. */
const memo = new WeakMap<Environment, FleetTarget[]>();

/** The clusters of an Environment as single-cluster views, in spec order. */
export function fleetTargets(env: Environment): FleetTarget[] {
  const known = memo.get(env);
  if (known) return known;
  let t: FleetTarget[];
  if (!isFleet(env)) t = env.spec.cluster ? [{ cluster: env.metadata.name, labels: {}, env }] : [];
  else {
    const { clusters, ...shared } = env.spec;
    t = (clusters ?? []).map((c: FleetCluster) => ({
      cluster: c.name,
      labels: c.labels ?? {},
      env: {
        ...env,
        metadata: { ...env.metadata, annotations: { ...env.metadata.annotations, [FLEET_CLUSTER_ANNOTATION]: c.name } },
        spec: {
          ...shared,
          cluster: c.cluster,
          namespace: c.namespace ?? env.spec.namespace,
          delivery: c.delivery ?? env.spec.delivery,
        },
      },
    }));
  }
  memo.set(env, t);
  return t;
}

/** One target by cluster name, undefined when the Environment no longer has that cluster. */
export function fleetTarget(env: Environment, cluster: string): FleetTarget | undefined {
  return fleetTargets(env).find((t) => t.cluster === cluster);
}

export interface WaveAssignment {
  name: string;
  clusters: string[];
  wave?: Wave;
}

/**
 * Pure: which clusters each wave of a stage promotes. Waves take clusters in order, each from the
 * ones no earlier wave took: by name, by labels, by a share of the whole fleet (rounded up, at least
 * one, in cluster order), or all the rest when the wave names none. Clusters no wave selects join the
 * last wave, so every cluster is promoted. Without waves the whole fleet is one wave, `all`. Waves
 * left without clusters are dropped.
 */
export function assignWaves(
  targets: readonly Pick<FleetTarget, 'cluster' | 'labels'>[],
  stage?: Pick<Stage, 'waves'>,
): WaveAssignment[] {
  const waves = stage?.waves?.length ? stage.waves : undefined;
  if (!waves) return targets.length ? [{ name: 'all', clusters: targets.map((t) => t.cluster) }] : [];
  const left = [...targets];
  const out: WaveAssignment[] = [];
  for (const wave of waves) {
    let taken: typeof left;
    if (wave.clusters) {
      const names = new Set(wave.clusters);
      taken = left.filter((t) => names.has(t.cluster));
    } else if (wave.selector) {
      const want = Object.entries(wave.selector.matchLabels ?? {});
      taken = left.filter((t) => want.every(([k, v]) => t.labels[k] === v));
    } else if (wave.percent !== undefined) {
      taken = left.slice(0, Math.max(1, Math.ceil((targets.length * wave.percent) / 100)));
    } else taken = [...left];
    const took = new Set(taken.map((t) => t.cluster));
    for (let i = left.length - 1; i >= 0; i--) if (took.has(left[i].cluster)) left.splice(i, 1);
    out.push({ name: wave.name, clusters: taken.map((t) => t.cluster), wave });
  }
  if (left.length && out.length) out[out.length - 1].clusters.push(...left.map((t) => t.cluster));
  return out.filter((w) => w.clusters.length);
}
