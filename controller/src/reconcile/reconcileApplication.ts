import { type Application, type ApplicationStatus, type EnvironmentVersion, setCondition } from '@kpromo/api';
import { runningVersion } from '../candidates/runningVersion.js';
import { derivedStatus } from './derivedStatus.js';
import { policyDigests } from './policyChange.js';
import { iso } from './time.js';

/**
 * Pure: the versions to record, keeping `updatedAt` while an environment's tag/digest is unchanged
 * (so it says since when that version runs, and repeated reconciles write nothing), and
 * `healthySince` while that version stays Healthy (soak time is measured from it).
 */
export function mergeVersions(
  prev: readonly EnvironmentVersion[] | undefined,
  current: readonly EnvironmentVersion[],
  now: Date,
): EnvironmentVersion[] {
  return current.map((v) => {
    const p = prev?.find((x) => x.environment === v.environment);
    // An unreachable cluster says nothing about what runs there: keep the last known version.
    if (v.health === 'Unknown' && !v.tag && !v.digest && p && (p.tag || p.digest)) {
      // …but not that it stayed Healthy: soak time starts again once the cluster answers.
      const { healthySince: _, ...known } = p;
      return { ...known, health: 'Unknown', ...(v.message ? { message: v.message } : {}) };
    }
    const same = p && p.tag === v.tag && p.digest === v.digest;
    const updatedAt = same ? p.updatedAt : v.tag || v.digest ? iso(now) : undefined;
    const out: EnvironmentVersion = { ...v };
    if (updatedAt) out.updatedAt = updatedAt;
    if (v.health === 'Healthy' && v.digest) out.healthySince = same && p.healthySince ? p.healthySince : iso(now);
    else delete out.healthySince;
    return out;
  });
}

/** Pure: full desired status of an Application from what runs in each Environment. */
export function applicationStatus(
  app: Application,
  current: readonly EnvironmentVersion[],
  now: Date,
): ApplicationStatus {
  const prev = app.status;
  const versions = mergeVersions(prev?.versions, current, now);
  const degraded = versions.filter((v) => v.health === 'Degraded').map((v) => v.environment);
  const unknown = versions.filter((v) => v.health === 'Unknown').map((v) => v.environment);
  const cond = degraded.length
    ? { type: 'Ready', status: 'False' as const, reason: 'Degraded', message: `degraded in ${degraded.join(', ')}` }
    : unknown.length
      ? {
          type: 'Ready',
          status: 'Unknown' as const,
          reason: 'ClusterNotSynced',
          message: `no data yet for ${unknown.join(', ')}`,
        }
      : {
          type: 'Ready',
          status: 'True' as const,
          reason: 'Observed',
          message: `observed in ${versions.length} environment(s)`,
        };
  return {
    ...prev,
    observedGeneration: app.metadata.generation,
    versions,
    conditions: setCondition(prev?.conditions, cond, app.metadata.generation, now),
    policyDigests: policyDigests(app),
  };
}

/** Writes Application.status.versions from the cache; a no-op when nothing changed. */
export const reconcileApplication = derivedStatus<ApplicationStatus, Application>({
  read: (cache, namespace, name) => cache.getApplication(namespace, name),
  derive: (app, { cache, namespace, now }) => {
    const envs = cache.environments(namespace);
    // Wait for caches that are still warming up (their sync event re-triggers us), but not for a
    // cluster that failed: one broken Environment must not freeze every Application's status.
    const failed = new Map<string, string>();
    for (const e of envs) {
      if (cache.environmentSynced(e)) continue;
      const st = cache.environmentState(e);
      const err = st.error ?? st.watchError;
      if (!err) return undefined;
      failed.set(e.metadata.name, err);
    }
    return applicationStatus(
      app,
      envs.map((e) =>
        failed.has(e.metadata.name)
          ? {
              environment: e.metadata.name,
              health: 'Unknown' as const,
              message: `cluster not reachable: ${failed.get(e.metadata.name)}`,
            }
          : runningVersion(cache, app, e),
      ),
      now,
    );
  },
});
