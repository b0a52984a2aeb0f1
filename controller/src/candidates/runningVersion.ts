import type { Application, Environment, EnvironmentVersion, WorkloadRef } from '@kpromo/api';
import type { CacheView } from '../kube/cacheView.js';
import { containerOf, workloadReady } from '../rollout/rolloutVerdict.js';
import { parseImageRef } from '../util/imageRef.js';

/** Workloads of an Application that apply to an Environment (WorkloadRef.environments filter). */
export function workloadsFor(app: Application, envName: string): WorkloadRef[] {
  return app.spec.workloads.filter((w) => !w.environments || w.environments.includes(envName));
}

/** What runs in an Environment for an Application: tag/digest from the first applicable workload, health from all. */
export function runningVersion(cache: CacheView, app: Application, env: Environment): EnvironmentVersion {
  const envName = env.metadata.name;
  const refs = workloadsFor(app, envName);
  if (!refs.length)
    return { environment: envName, health: 'Missing', message: 'no workload applies to this environment' };
  if (!cache.environmentSynced(env))
    return { environment: envName, health: 'Unknown', message: 'cluster not synced yet' };
  let version: EnvironmentVersion | undefined;
  let health: EnvironmentVersion['health'] = 'Healthy';
  const notes: string[] = [];
  for (const ref of refs) {
    const kind = ref.kind ?? 'Deployment';
    const w = cache.getWorkload(env, kind, ref.name);
    if (!w)
      return {
        environment: envName,
        health: 'Missing',
        message: `${kind} ${ref.name} not found in ${env.spec.namespace}`,
      };
    const c = containerOf({ ...w, kind }, ref.container);
    if (!version && c?.image) {
      const r = parseImageRef(c.image);
      version = { environment: envName, tag: r.tag, digest: r.digest, health: 'Healthy' };
    }
    const r = workloadReady({ ...w, kind });
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
