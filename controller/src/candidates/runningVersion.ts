import type { Application, Environment, EnvironmentVersion, WorkloadRef } from '@kpromo/api';
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
