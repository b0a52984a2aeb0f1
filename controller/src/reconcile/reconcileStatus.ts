import {
  type ApplicationDrift,
  type Condition,
  type ConditionInput,
  type Environment,
  type EnvironmentStatus,
  type OrgRuleCovering,
  type PromotionFlow,
  type PromotionFlowStatus,
  type StageCooldown,
  setCondition,
} from '@kpromo/api';
import { computeCandidates, stagePairs } from '../candidates/computeCandidates.js';
import { versionReader } from '../candidates/versionReader.js';
import { type DeliveryAccess, describeNeed } from '../delivery/deliveryAccess.js';
import type { CacheView, EnvironmentState } from '../kube/cacheView.js';
import { clusterKey } from '../kube/clusters.js';
import type { KubeRest } from '../kube/rest.js';
import { effectiveGates, environmentOrgRules, orgRulesFor } from '../policy/orgGates.js';
import { derivedStatus } from './derivedStatus.js';
import { driftedCondition, driftText } from './driftDecisions.js';
import { policyDigests } from './policyChange.js';

/** Environment condition: the controller's identity may deliver there (see deliveryCondition). */
export const DELIVERY_PERMITTED = 'DeliveryPermitted';

const withReady = <S extends { conditions?: Condition[] }>(
  prev: S | undefined,
  ready: ConditionInput,
  generation: number | undefined,
  now: Date,
) => setCondition(prev?.conditions, ready, generation, now);

/**
 * Pure: PromotionFlow status from the cache. `pendingCandidates` sums the release candidates of every
 * stage transition (N -> N+1). Ready is False when a stage names an Environment that does not exist
 * or whose cluster is broken, Unknown while a stage's cluster has not synced (the previous count is
 * kept meanwhile, so a restart does not flap it), True otherwise. `cooldowns` are the automatic
 * stages waiting for their source to be quiet, as the automatic promotion just decided them.
 */
export function flowStatus(
  flow: PromotionFlow,
  cache: CacheView,
  now: Date,
  cooldowns: readonly StageCooldown[] = [],
  /** Where OrgPolicies count: status.orgRules lists the rules stricter than the flow's stages. */
  orgPolicyNamespace?: string,
): PromotionFlowStatus {
  const ns = flow.metadata.namespace ?? 'default';
  const gen = flow.metadata.generation;
  const prev = flow.status;
  const out = (ready: ConditionInput, pendingCandidates: number | undefined): PromotionFlowStatus => {
    const s: PromotionFlowStatus = {
      ...prev,
      observedGeneration: gen,
      conditions: withReady(prev, ready, gen, now),
      policyDigests: policyDigests(flow),
    };
    if (pendingCandidates === undefined) delete s.pendingCandidates;
    else s.pendingCandidates = pendingCandidates;
    if (cooldowns.length) s.cooldowns = [...cooldowns];
    else delete s.cooldowns;
    const org = flowOrgRules(flow, cache, orgPolicyNamespace);
    if (org.length) s.orgRules = org;
    else delete s.orgRules;
    return s;
  };
  const stages = flow.spec.stages.map((s, i) => ({ name: s.environment, index: i + 1 }));
  const missing = stages.filter((s) => !cache.getEnvironment(ns, s.name));
  if (missing.length) {
    const what = missing.map((s) => `"${s.name}" (stage ${s.index})`).join(', ');
    return out(
      {
        type: 'Ready',
        status: 'False',
        reason: 'EnvironmentNotFound',
        message: `Environment ${what} ${missing.length > 1 ? 'do' : 'does'} not exist in namespace ${ns}; fix spec.stages`,
      },
      undefined,
    );
  }
  const envs = stages.map((s) => cache.getEnvironment(ns, s.name)!);
  const broken = envs
    .map((e) => ({ e, st: cache.environmentState(e) }))
    .filter(({ st }) => st.error || (!st.synced && st.watchError));
  if (broken.length) {
    const msg = broken.map(({ e, st }) => `Environment "${e.metadata.name}": ${st.error ?? st.watchError}`).join('; ');
    return out(
      { type: 'Ready', status: 'False', reason: 'EnvironmentNotReady', message: msg },
      prev?.pendingCandidates,
    );
  }
  const unsynced = envs.filter((e) => !cache.environmentSynced(e)).map((e) => e.metadata.name);
  if (unsynced.length) {
    return out(
      {
        type: 'Ready',
        status: 'Unknown',
        reason: 'ClusterNotSynced',
        message: `waiting for the cluster of Environment(s) ${unsynced.join(', ')} to sync`,
      },
      prev?.pendingCandidates,
    );
  }
  const byName = new Map(envs.map((e) => [e.metadata.name, e]));
  const apps = cache.applications(ns);
  const counts: string[] = [];
  let total = 0;
  const read = versionReader(cache);
  try {
    for (const p of stagePairs(flow)) {
      const n = computeCandidates(flow, apps, (a, e) => read(a, byName.get(e)!), p.from, p.to).candidates.length;
      total += n;
      counts.push(`${p.from} -> ${p.to}: ${n}`);
    }
  } catch (e) {
    return out(
      { type: 'Ready', status: 'False', reason: 'InvalidFlow', message: (e as Error).message },
      prev?.pendingCandidates,
    );
  }
  return out(
    {
      type: 'Ready',
      status: 'True',
      reason: 'Ready',
      message: `${total} release candidate(s) pending (${counts.join(', ')})`,
    },
    total,
  );
}

/** A drift of an application in an Environment (its Application's `status.drift` entry). */
export interface EnvironmentDrift {
  application: string;
  drift: ApplicationDrift;
}

/**
 * Pure: the Environment's Drifted condition (docs/drift.md): which applications run something other
 * than kpromo's last completed plan delivered there, so `kubectl get penv` and every reader of the
 * Environment see it without reading each Application.
 */
export function environmentDriftCondition(drifted: readonly EnvironmentDrift[]): ConditionInput {
  const apps = new Set(drifted.map((d) => d.application)).size;
  return driftedCondition(
    drifted.map((d) => `${d.application}: ${driftText(d.drift)}`),
    'every application runs what kpromo last delivered here (or kpromo delivered nothing here yet)',
    `${apps} application(s) run what kpromo did not deliver (their status.drift): `,
  );
}

/**
 * Pure: Environment status from its watch state. `applications` counts the Applications whose
 * workloads are observed in the Environment's cluster+namespace (known only once synced).
 */
export function environmentStatus(
  env: Environment,
  state: EnvironmentState,
  observedApplications: number,
  now: Date,
  access?: DeliveryAccess,
  drifted?: readonly EnvironmentDrift[],
  orgRules: readonly OrgRuleCovering[] = [],
): EnvironmentStatus {
  const gen = env.metadata.generation;
  const prev = env.status;
  const where = `namespace ${env.spec.namespace} of cluster ${clusterKey(env)}`;
  let ready: ConditionInput;
  let applications: number | undefined = prev?.applications;
  if (state.error)
    ready = { type: 'Ready', status: 'False', reason: state.reason ?? 'ClusterUnreachable', message: state.error };
  else if (!state.synced && state.watchError)
    ready = { type: 'Ready', status: 'False', reason: 'WatchFailed', message: `${where}: ${state.watchError}` };
  else if (!state.synced)
    ready = { type: 'Ready', status: 'Unknown', reason: 'Syncing', message: `listing workloads in ${where}` };
  else {
    applications = observedApplications;
    ready = {
      type: 'Ready',
      status: 'True',
      reason: 'Synced',
      message: `watching Deployments, StatefulSets${state.helmReleases ? ', HelmReleases' : ''} in ${where}; ${observedApplications} application(s) observed`,
    };
  }
  let conditions = withReady(prev, ready, gen, now);
  if (access) conditions = setCondition(conditions, deliveryCondition(access), gen, now);
  if (drifted) conditions = setCondition(conditions, environmentDriftCondition(drifted), gen, now);
  const s: EnvironmentStatus = {
    ...prev,
    observedGeneration: gen,
    conditions,
    policyDigests: policyDigests(env),
  };
  if (applications === undefined) delete s.applications;
  else s.applications = applications;
  if (orgRules.length) s.orgRules = [...orgRules];
  else delete s.orgRules;
  return s;
}

/**
 * Pure: the org rules stricter than the flow's own stages (policy/orgGates.ts), per stage: what
 * decides for plans into it instead of the flow, which is not changed.
 */
export function flowOrgRules(
  flow: PromotionFlow,
  cache: Pick<CacheView, 'getEnvironment' | 'orgPolicies'>,
  orgPolicyNamespace: string | undefined,
): NonNullable<PromotionFlowStatus['orgRules']> {
  if (!orgPolicyNamespace) return [];
  const ns = flow.metadata.namespace ?? 'default';
  const policies = cache.orgPolicies(orgPolicyNamespace);
  return flow.spec.stages.flatMap((s, i) => {
    // The first stage is where releases come from: no plan goes into it.
    if (i === 0) return [];
    const env = cache.getEnvironment(ns, s.environment);
    const rules = orgRulesFor(policies, s.environment, env, orgPolicyNamespace);
    return effectiveGates(flow, s.environment, rules)
      .rules.filter((r) => r.stricter)
      .map((r) => ({ environment: s.environment, ...r }));
  });
}

/**
 * Writes PromotionFlow.status from the cache and the cooldowns the automatic promotion decided; a
 * no-op when nothing changed.
 */
export const reconcileFlow = (
  cache: CacheView,
  control: KubeRest,
  namespace: string,
  name: string,
  now = new Date(),
  cooldowns: readonly StageCooldown[] = [],
  orgPolicyNamespace?: string,
): Promise<boolean> =>
  derivedStatus<PromotionFlowStatus, PromotionFlow>({
    read: (c, ns, n) => c.getFlow(ns, n),
    derive: (flow, ctx) => flowStatus(flow, ctx.cache, ctx.now, cooldowns, orgPolicyNamespace),
  })(cache, control, namespace, name, now);

/**
 * Pure: condition DeliveryPermitted from what the Environment's cluster answered about the
 * controller's own rights there (delivery/deliveryAccess.ts): a missing verb fails every promotion
 * into it, so it is said before the first one.
 */
export function deliveryCondition(access: DeliveryAccess): ConditionInput {
  if (access.error)
    return {
      type: DELIVERY_PERMITTED,
      status: 'Unknown',
      reason: 'CheckFailed',
      message: `the controller's rights here could not be checked: ${access.error}`,
    };
  if (access.missing.length)
    return {
      type: DELIVERY_PERMITTED,
      status: 'False',
      reason: 'Forbidden',
      message: `the controller's identity in this cluster may not ${access.missing.map(describeNeed).join(', ')}: promotions into this Environment fail until it is granted`,
    };
  return {
    type: DELIVERY_PERMITTED,
    status: 'True',
    reason: 'Permitted',
    message: "the controller's identity holds every verb this Environment's delivery needs",
  };
}

/**
 * Writes Environment.status from the cache (and, given, the controller's delivery rights and where
 * OrgPolicies count); a no-op when nothing changed.
 */
export const environmentReconciler = (
  accessOf?: (env: Environment) => DeliveryAccess | undefined,
  orgPolicyNamespace?: string,
) =>
  derivedStatus<EnvironmentStatus, Environment>({
    read: (cache, namespace, name) => cache.getEnvironment(namespace, name),
    derive: (env, { cache, namespace, now }) => {
      const state = cache.environmentState(env);
      const read = versionReader(cache);
      const observed = state.synced
        ? cache.applications(namespace).filter((a) => {
            const h = read(a, env).health;
            return h !== 'Missing' && h !== 'Unknown';
          }).length
        : 0;
      // Known only once its workloads are listed: until then the drift is not judged (no condition).
      const drifted = state.synced
        ? cache
            .applications(namespace)
            .flatMap((a) =>
              (a.status?.drift ?? [])
                .filter((d) => d.environment === env.metadata.name)
                .map((drift) => ({ application: a.metadata.name, drift })),
            )
        : undefined;
      const orgRules = orgPolicyNamespace
        ? environmentOrgRules(cache.orgPolicies(orgPolicyNamespace), env, orgPolicyNamespace)
        : [];
      return environmentStatus(env, state, observed, now, accessOf?.(env), drifted, orgRules);
    },
  });

export const reconcileEnvironment = environmentReconciler();
