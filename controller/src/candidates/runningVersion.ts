import type { Application, Environment, EnvironmentVersion, WorkloadRef } from '@kpromo/api';
import type { CacheView, Workload } from '../kube/cacheView.js';
import { containerOf, workloadReady } from '../rollout/rolloutVerdict.js';
import { parseImageRef } from '../util/imageRef.js';

/** Workloads of an Application that apply to an Environment (WorkloadRef.environments filter). */
export function workloadsFor(app: Application, envName: string): WorkloadRef[] {
  return app.spec.workloads.filter((w) => !w.environments || w.environments.includes(envName));
}

type WorkloadReading = { image?: ReturnType<typeof parseImageRef>; r: ReturnType<typeof workloadReady> };
/**
 * The image and readiness read from one cached workload object, kept while that object is (the
 * cache replaces it on every change): candidate computation reads every workload of every
 * Application for each stage pair, thousands of times per answer at scale.
 */
const readings = new WeakMap<object, Map<string, WorkloadReading>>();
function readWorkload(w: Workload, kind: string, container: string | undefined): WorkloadReading {
  let byRef = readings.get(w);
  if (!byRef) {
    byRef = new Map();
    readings.set(w, byRef);
  }
  const key = `${kind}|${container ?? ''}`;
  let reading = byRef.get(key);
  if (!reading) {
    const typed = { ...w, kind };
    const c = containerOf(typed, container);
    reading = { image: c?.image ? parseImageRef(c.image) : undefined, r: workloadReady(typed) };
    byRef.set(key, reading);
  }
  return reading;
}

/**
 * The last answer per Application and Environment object, with the workload objects it was read
 * from. The cache replaces an object on every change, so the same app, environment and workload
 * objects give the same answer: at 5,000 apps a diff reads 10,000 of them and most have not
 * changed since the last one. Workloads are held weakly: a replaced one is not kept alive for this.
 */
const answers = new WeakMap<
  Application,
  WeakMap<Environment, { from: Array<WeakRef<Workload> | undefined>; v: EnvironmentVersion }>
>();

const sameObjects = (held: ReadonlyArray<WeakRef<Workload> | undefined>, now: ReadonlyArray<Workload | undefined>) =>
  held.length === now.length && held.every((r, i) => r?.deref() === now[i]);

/**
 * What runs in an Environment for an Application: tag/digest from the first applicable workload,
 * health from all. Each call returns its own object (callers may add to it).
 */
export function runningVersion(cache: CacheView, app: Application, env: Environment): EnvironmentVersion {
  const envName = env.metadata.name;
  const refs = workloadsFor(app, envName);
  if (!refs.length)
    return { environment: envName, health: 'Missing', message: 'no workload applies to this environment' };
  if (!cache.environmentSynced(env))
    return { environment: envName, health: 'Unknown', message: 'cluster not synced yet' };
  const from = refs.map((ref) => cache.getWorkload(env, ref.kind ?? 'Deployment', ref.name));
  let byEnv = answers.get(app);
  const known = byEnv?.get(env);
  if (known && sameObjects(known.from, from)) return { ...known.v };
  const v = readVersion(env, refs, from);
  if (!byEnv) {
    byEnv = new WeakMap();
    answers.set(app, byEnv);
  }
  byEnv.set(env, { from: from.map((w) => (w ? new WeakRef(w) : undefined)), v });
  return { ...v };
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
