import type { Application, Environment, EnvironmentVersion, WorkloadRef } from '@kpromo/api';
import { fleetTargets, isFleet } from '@kpromo/api';
import type { CacheView, Workload } from '../kube/cacheView.js';
import { containerOf, workloadReady } from '../rollout/rolloutVerdict.js';
import { parseImageRef } from '../util/imageRef.js';

/** Workloads of an Application that apply to an Environment (WorkloadRef.environments filter). */
export function workloadsFor(app: Application, envName: string): WorkloadRef[] {
  return app.spec.workloads.filter((w) => !w.environments || w.environments.includes(envName));
}

type WorkloadReading = {
  key: string;
  image?: ReturnType<typeof parseImageRef>;
  r: ReturnType<typeof workloadReady>;
};
/**
 * The image and readiness read from one cached workload object, kept while that object is (the
 * cache replaces it on every change): versions are read for every Application in every Environment,
 * thousands of times at scale. One reading per object (its kind and container as the key): an
 * object read with another container is read afresh.
 */
const readings = new WeakMap<object, WorkloadReading>();
function readWorkload(w: Workload, kind: string, container: string | undefined): WorkloadReading {
  const key = container === undefined ? kind : `${kind}|${container}`;
  let reading = readings.get(w);
  if (reading?.key !== key) {
    const typed = { ...w, kind };
    const c = containerOf(typed, container);
    reading = { key, image: c?.image ? parseImageRef(c.image) : undefined, r: workloadReady(typed) };
    readings.set(w, reading);
  }
  return reading;
}

/**
 * What runs in an Environment for an Application: tag/digest from the first applicable workload,
 * health from all. Each call returns its own object (callers may add to it). Answers that read many
 * versions keep them between calls (versionReader.ts).
 */
export function runningVersion(cache: CacheView, app: Application, env: Environment): EnvironmentVersion {
  if (isFleet(env))
    return fleetVersion(
      env.metadata.name,
      fleetTargets(env).map((t) => ({ cluster: t.cluster, version: runningVersion(cache, app, t.env) })),
    );
  const envName = env.metadata.name;
  const refs = workloadsFor(app, envName);
  if (!refs.length)
    return { environment: envName, health: 'Missing', message: 'no workload applies to this environment' };
  if (!cache.environmentSynced(env))
    return { environment: envName, health: 'Unknown', message: 'cluster not synced yet' };
  return readVersion(
    env,
    refs,
    refs.map((ref) => cache.getWorkload(env, ref.kind ?? 'Deployment', ref.name)),
  );
}

function readVersion(env: Environment, refs: WorkloadRef[], objects: Array<Workload | undefined>): EnvironmentVersion {
  const envName = env.metadata.name;
  let version: EnvironmentVersion | undefined;
  let health: EnvironmentVersion['health'] = 'Healthy';
  const notes: string[] = [];
  for (const [i, ref] of refs.entries()) {
    const kind = ref.kind ?? 'Deployment';
    const w = objects[i];
    if (!w)
      return {
        environment: envName,
        health: 'Missing',
        message: `${kind} ${ref.name} not found in ${env.spec.namespace}`,
      };
    const { image, r } = readWorkload(w, kind, ref.container);
    if (!version && image) version = { environment: envName, tag: image.tag, digest: image.digest, health: 'Healthy' };
    if (
      r.failed ||
      w.status?.conditions?.some((x) => x.reason === 'ProgressDeadlineExceeded' && x.status === 'False')
    ) {
      health = 'Degraded';
      notes.push(`${ref.name}: ${r.failed ? r.message : 'progress deadline exceeded'}`);
    } else if (!r.ready) {
      if (health === 'Healthy') health = 'Progressing';
      notes.push(`${ref.name}: ${r.paused ? 'Paused: ' : ''}${r.message}`);
    }
  }
  return { ...(version ?? { environment: envName }), health, ...(notes.length ? { message: notes.join('; ') } : {}) };
}

/** Worst first: a fleet is as healthy as its least healthy cluster. */
const HEALTH_ORDER: ReadonlyArray<EnvironmentVersion['health']> = [
  'Degraded',
  'Missing',
  'Unknown',
  'Progressing',
  'Healthy',
];

/**
 * Pure: what runs in a fleet Environment from what runs in each of its clusters. When they agree,
 * that version; when they do not, `drift` and the version most clusters run (the first cluster's
 * on a tie), with which cluster runs what in the message. Health is the worst cluster's. Clusters
 * where the application has no workload (Missing) are listed but neither drift nor lower the health
 * (an app need not run everywhere), unless it runs nowhere.
 */
export function fleetVersion(
  environment: string,
  per: ReadonlyArray<{ cluster: string; version: EnvironmentVersion }>,
): EnvironmentVersion {
  const clusters = per.map(({ cluster, version: v }) => ({
    cluster,
    ...(v.tag ? { tag: v.tag } : {}),
    ...(v.digest ? { digest: v.digest } : {}),
    health: v.health,
    ...(v.message ? { message: v.message } : {}),
  }));
  if (!clusters.length) return { environment, health: 'Missing', message: 'the fleet has no clusters', clusters };
  const present = clusters.filter((c) => c.health !== 'Missing');
  const counted = present.length ? present : clusters;
  const key = (c: (typeof clusters)[number]) => c.digest ?? c.tag ?? '';
  const groups = new Map<string, typeof clusters>();
  for (const c of counted) groups.set(key(c), [...(groups.get(key(c)) ?? []), c]);
  const [top] = [...groups.values()].sort((a, b) => b.length - a.length);
  const health = HEALTH_ORDER.find((h) => counted.some((c) => c.health === h)) ?? 'Unknown';
  const drift = groups.size > 1;
  const unhealthy = counted.filter((c) => c.health !== 'Healthy').map((c) => `${c.cluster}: ${c.message ?? c.health}`);
  const notes = [
    ...(drift
      ? [
          `clusters disagree: ${[...groups.values()]
            .map((g) => `${g[0].tag ?? g[0].digest ?? 'nothing'} in ${g.map((c) => c.cluster).join(', ')}`)
            .join('; ')}`,
        ]
      : []),
    ...unhealthy,
  ];
  return {
    environment,
    ...(top[0].tag ? { tag: top[0].tag } : {}),
    ...(top[0].digest ? { digest: top[0].digest } : {}),
    health,
    ...(notes.length ? { message: notes.join('; ') } : {}),
    ...(drift ? { drift: true } : {}),
    clusters,
  };
}
