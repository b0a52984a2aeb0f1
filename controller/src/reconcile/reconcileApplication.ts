import {
  type Application,
  type ApplicationDrift,
  type ApplicationStatus,
  type Environment,
  type EnvironmentVersion,
  fleetTargets,
  isFleet,
  setCondition,
} from '@kpromo/api';
import { runningVersion, workloadsFor } from '../candidates/runningVersion.js';
import { KPROMO_FIELD_MANAGER } from '../delivery/patchWorkload.js';
import type { CacheView } from '../kube/cacheView.js';
import type { KubeRest } from '../kube/rest.js';
import { containerOf } from '../rollout/rolloutVerdict.js';
import { deriveAndWrite } from './derivedStatus.js';
import {
  driftDecision,
  driftedCondition,
  driftText,
  lastDelivered,
  planInFlight,
  type Running,
} from './driftDecisions.js';
import { policyDigests } from './policyChange.js';
import { StatusWriter } from './statusWriter.js';
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

/**
 * Pure: full desired status of an Application from what runs in each Environment, and the drifts
 * found (status.drift and condition Drifted; left as they are when not given).
 */
export function applicationStatus(
  app: Application,
  current: readonly EnvironmentVersion[],
  now: Date,
  drift?: readonly ApplicationDrift[],
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
  let conditions = setCondition(prev?.conditions, cond, app.metadata.generation, now);
  if (drift)
    conditions = setCondition(
      conditions,
      driftedCondition(
        drift.map(driftText),
        'every environment runs what kpromo last delivered there (or kpromo delivered nothing there yet)',
      ),
      app.metadata.generation,
      now,
    );
  const out: ApplicationStatus = {
    ...prev,
    observedGeneration: app.metadata.generation,
    versions,
    conditions,
    policyDigests: policyDigests(app),
  };
  if (drift) {
    if (drift.length) out.drift = [...drift];
    else delete out.drift;
  }
  return out;
}

/** What runs in one cluster+namespace for drift: the version, and who wrote the image last. */
function runningForDrift(cache: CacheView, app: Application, env: Environment): Running & { container?: string } {
  const v = runningVersion(cache, app, env);
  const known = v.health !== 'Unknown' && cache.environmentSynced(env);
  for (const ref of workloadsFor(app, env.metadata.name)) {
    const kind = ref.kind ?? 'Deployment';
    const w = cache.getWorkload(env, kind, ref.name);
    if (!w) continue;
    const c = containerOf({ ...w, kind }, ref.container);
    if (!c?.image) continue;
    return { tag: v.tag, digest: v.digest, known, writers: w.metadata.imageWriters, container: c.name };
  }
  return { tag: v.tag, digest: v.digest, known };
}

/**
 * The drifts of an Application, from the cache only (plans and the workload informers): per
 * Environment, and per cluster of a fleet, where the last completed plan delivered a version and a
 * workload runs another (driftDecisions.ts). Environments whose cluster failed keep their last verdict.
 */
export function applicationDrift(
  cache: CacheView,
  app: Application,
  envs: readonly Environment[],
  failed: ReadonlySet<string>,
  now: Date,
  recent?: readonly ApplicationDrift[],
): ApplicationDrift[] {
  const plans = cache.plans(app.metadata.namespace);
  const prev = [...(recent ?? []), ...(app.status?.drift ?? [])];
  const out: ApplicationDrift[] = [];
  for (const env of envs) {
    const envName = env.metadata.name;
    const delivered = lastDelivered(plans, app.metadata.name, envName);
    if (!delivered.size) continue;
    const inFlight = planInFlight(plans, app.metadata.name, envName);
    const targets = isFleet(env)
      ? fleetTargets(env).map((t) => ({ cluster: t.cluster, env: t.env }))
      : [{ cluster: '', env }];
    for (const t of targets) {
      const previous = prev.find((d) => d.environment === envName && (d.cluster ?? '') === t.cluster);
      const running: Running & { container?: string } = failed.has(envName)
        ? { known: false }
        : runningForDrift(cache, app, t.env);
      const d = driftDecision({
        delivered: delivered.get(t.cluster),
        inFlight,
        running,
        container: running.container,
        previous,
        ownManagers: [KPROMO_FIELD_MANAGER],
        environment: envName,
        ...(t.cluster ? { cluster: t.cluster } : {}),
        now,
      });
      if (d) out.push(d);
    }
  }
  return out;
}

/** What the controller does besides the status write (drift Events and metrics). */
export interface ApplicationHooks {
  /** The drift this process derived last for the app: fresher than a cached status that lags its write. */
  previousDrift?(app: Application): readonly ApplicationDrift[] | undefined;
  /** Every derivation, written or not: the status as it should be (level-triggered metrics). */
  derived?(app: Application, next: ApplicationStatus): void;
  /** After a write, with the status before it (so a new drift is told once). */
  written?(app: Application, prev: ApplicationStatus | undefined, next: ApplicationStatus): void;
}

/** Pure apart from the cache: the desired status; undefined while caches are still warming up. */
function deriveApplication(
  app: Application,
  cache: CacheView,
  namespace: string,
  now: Date,
  recentDrift?: readonly ApplicationDrift[],
) {
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
    applicationDrift(cache, app, envs, new Set(failed.keys()), now, recentDrift),
  );
}

/**
 * Writes Application.status (versions, drift, conditions) from the cache; a no-op when nothing
 * changed. `hooks` see every derivation and every write.
 */
export function reconcileApplication(
  cache: CacheView,
  control: KubeRest,
  namespace: string,
  name: string,
  now = new Date(),
  hooks: ApplicationHooks = {},
): Promise<boolean> {
  return deriveAndWrite<ApplicationStatus, Application>({
    read: () => cache.getApplication(namespace, name),
    derive: (app) => {
      const next = deriveApplication(app, cache, namespace, now, hooks.previousDrift?.(app));
      if (next) hooks.derived?.(app, next);
      return next;
    },
    write: async (app, next) => {
      const written = await new StatusWriter<ApplicationStatus, Application>(control, app, {
        overwriteOthers: true,
        priority: 'low',
      }).write(next);
      hooks.written?.(written, app.status, next);
    },
  });
}
