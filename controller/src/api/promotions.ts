import type { Application, Environment, EnvironmentVersion, PromotionPlan } from '@kpromo/api';
import { API_VERSION } from '@kpromo/api';
import {
  type CandidateFilter,
  type CandidateResult,
  computeCandidates,
  stagePairs,
} from '../candidates/computeCandidates.js';
import { runningVersion } from '../candidates/runningVersion.js';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import { isConflict, KubeError } from '../kube/rest.js';
import { formatTimestamp } from '../reconcile/tagTemplate.js';
import { registryRepository } from '../util/imageRef.js';
import { type ApiContext, ApiError } from './context.js';

export interface ApplicationView {
  namespace: string;
  name: string;
  owner: string;
  repository: string;
  labels: Record<string, string>;
  versions: EnvironmentVersion[];
}

/** Applications with the version running in every Environment of their namespace (from the cache). */
export function listApplications(ctx: ApiContext, q: { namespace?: string } = {}): ApplicationView[] {
  return ctx.cache.applications(q.namespace).map((a) => {
    const envs = ctx.cache.environments(a.metadata.namespace);
    return {
      namespace: a.metadata.namespace ?? '',
      name: a.metadata.name,
      owner: a.spec.owner,
      repository: a.spec.image.repository,
      labels: { ...(a.metadata.labels ?? {}), ...(a.spec.labels ?? {}) },
      versions: envs.map((e) => runningVersion(ctx.cache, a, e)),
    };
  });
}

export interface EnvironmentView {
  namespace: string;
  name: string;
  tier?: string;
  cluster: Environment['spec']['cluster'];
  targetNamespace: string;
  registry: string;
  delivery: string;
  synced: boolean;
}

export function listEnvironments(ctx: ApiContext, q: { namespace?: string } = {}): EnvironmentView[] {
  return ctx.cache.environments(q.namespace).map((e) => ({
    namespace: e.metadata.namespace ?? '',
    name: e.metadata.name,
    tier: e.spec.tier,
    cluster: e.spec.cluster,
    targetNamespace: e.spec.namespace,
    registry: e.spec.registry.host,
    delivery: e.spec.delivery.method,
    synced: ctx.cache.environmentSynced(e),
  }));
}

export interface DiffQuery extends CandidateFilter {
  namespace?: string;
  flow?: string;
  from: string;
  to: string;
}

function findFlow(ctx: ApiContext, ns: string, flowName: string | undefined, from: string, to: string) {
  if (flowName) {
    const f = ctx.cache.getFlow(ns, flowName);
    if (!f) throw new ApiError(404, `PromotionFlow "${flowName}" not found in namespace ${ns}`);
    return f;
  }
  const matching = ctx.cache.flows(ns).filter((f) => stagePairs(f).some((p) => p.from === from && p.to === to));
  if (matching.length === 1) return matching[0];
  if (!matching.length)
    throw new ApiError(404, `no PromotionFlow in namespace ${ns} has the stage transition ${from} -> ${to}`);
  throw new ApiError(
    400,
    `several PromotionFlows have ${from} -> ${to} (${matching.map((f) => f.metadata.name).join(', ')}); pass flow`,
  );
}

/**
 * Release candidates between two adjacent stages, from the cache. Digests missing from a workload
 * image are resolved from the source registry when a resolver is configured.
 */
export async function diff(ctx: ApiContext, q: DiffQuery): Promise<CandidateResult & { flow: string }> {
  const ns = q.namespace ?? ctx.namespace;
  if (!q.from || !q.to) throw new ApiError(400, 'from and to are required');
  const flow = findFlow(ctx, ns, q.flow, q.from, q.to);
  const envs = new Map(ctx.cache.environments(ns).map((e) => [e.metadata.name, e]));
  for (const n of [q.from, q.to])
    if (!envs.has(n)) throw new ApiError(404, `Environment "${n}" not found in namespace ${ns}`);
  const apps = ctx.cache.applications(ns);
  const versions = new Map<string, EnvironmentVersion>();
  for (const a of apps) {
    for (const e of [q.from, q.to]) {
      const v = runningVersion(ctx.cache, a, envs.get(e)!);
      if (v.tag && !v.digest && ctx.resolveDigest) {
        const env = envs.get(e)!;
        v.digest = await ctx
          .resolveDigest(
            { host: env.spec.registry.host, insecure: env.spec.registry.insecure },
            registryRepository(env.spec.registry.prefix, a.spec.image.repository),
            v.tag,
          )
          .catch(() => undefined);
      }
      versions.set(`${a.metadata.name}|${e}`, v);
    }
  }
  try {
    const r = computeCandidates(
      flow,
      apps,
      (a: Application, e: string) => versions.get(`${a.metadata.name}|${e}`),
      q.from,
      q.to,
      q,
    );
    return { ...r, flow: flow.metadata.name };
  } catch (e) {
    throw new ApiError(400, (e as Error).message);
  }
}

export interface CreatePlanRequest extends DiffQuery {
  name?: string;
  approve?: boolean;
  approvedBy?: string;
}

async function createObject(ctx: ApiContext, plan: PromotionPlan): Promise<PromotionPlan> {
  try {
    return await ctx.control.create<PromotionPlan>(
      resourcePath(KPROMO_TYPES.PromotionPlan, plan.metadata.namespace),
      plan,
    );
  } catch (e) {
    if (isConflict(e))
      throw new ApiError(409, `PromotionPlan ${plan.metadata.namespace}/${plan.metadata.name} already exists`);
    if (e instanceof KubeError && (e.status === 422 || e.status === 400)) throw new ApiError(400, e.message);
    throw e;
  }
}

/** Computes candidates from the cache and creates a PromotionPlan; returns at once (the controller promotes once approved). */
export async function createPlan(
  ctx: ApiContext,
  req: CreatePlanRequest,
): Promise<{ plan: PromotionPlan; skipped: CandidateResult['skipped'] }> {
  const ns = req.namespace ?? ctx.namespace;
  const d = await diff(ctx, { ...req, namespace: ns });
  if (!d.candidates.length) {
    throw new ApiError(
      400,
      `no release candidates ${req.from} -> ${req.to}: ${d.skipped.map((s) => `${s.application}: ${s.message}`).join('; ') || 'no applications'}`,
    );
  }
  const name = req.name ?? `${d.flow}-${req.to}-${formatTimestamp(new Date()).toLowerCase()}`;
  const plan: PromotionPlan = {
    apiVersion: API_VERSION,
    kind: 'PromotionPlan',
    metadata: { name, namespace: ns, labels: { 'promotions.kpromo.dev/flow': d.flow } },
    spec: {
      flow: d.flow,
      from: req.from,
      to: req.to,
      action: 'promote',
      candidates: d.candidates,
      ...(req.approve ? { approved: true, ...(req.approvedBy ? { approvedBy: req.approvedBy } : {}) } : {}),
    },
  };
  return { plan: await createObject(ctx, plan), skipped: d.skipped };
}

async function readPlan(ctx: ApiContext, ns: string, name: string): Promise<PromotionPlan> {
  const p = await ctx.control.getOrUndefined<PromotionPlan>(resourcePath(KPROMO_TYPES.PromotionPlan, ns, name));
  if (!p) throw new ApiError(404, `PromotionPlan ${ns}/${name} not found`);
  return p;
}

/** The plan with its live status (read through to the apiserver so callers see their own writes). */
export function getPlan(ctx: ApiContext, namespace: string, name: string): Promise<PromotionPlan> {
  return readPlan(ctx, namespace, name);
}

export function listPlans(ctx: ApiContext, q: { namespace?: string } = {}): PromotionPlan[] {
  return ctx.cache.plans(q.namespace);
}

/** Approves a plan. Approving twice is rejected (409) so nobody believes they started a second run. */
export async function approvePlan(
  ctx: ApiContext,
  namespace: string,
  name: string,
  approvedBy?: string,
): Promise<PromotionPlan> {
  const p = await readPlan(ctx, namespace, name);
  if (p.spec.approved) {
    throw new ApiError(
      409,
      `PromotionPlan ${namespace}/${name} is already approved${p.spec.approvedBy ? ` by ${p.spec.approvedBy}` : ''} (phase ${p.status?.phase ?? 'Pending'}); create a new plan to promote again`,
    );
  }
  try {
    // resourceVersion makes this a compare-and-swap: two concurrent approvals cannot both win.
    return await ctx.control.mergePatch<PromotionPlan>(resourcePath(KPROMO_TYPES.PromotionPlan, namespace, name), {
      metadata: { resourceVersion: p.metadata.resourceVersion },
      spec: { approved: true, ...(approvedBy ? { approvedBy } : {}) },
    });
  } catch (e) {
    if (isConflict(e))
      throw new ApiError(
        409,
        `PromotionPlan ${namespace}/${name} changed meanwhile (approved by someone else?); re-read it`,
      );
    throw e;
  }
}

/** Creates a rollback plan restoring the versions that `name` replaced. */
export async function rollbackPlan(
  ctx: ApiContext,
  namespace: string,
  name: string,
  opts: { approve?: boolean; approvedBy?: string; rollbackName?: string } = {},
): Promise<PromotionPlan> {
  const orig = await readPlan(ctx, namespace, name);
  if ((orig.spec.action ?? 'promote') === 'rollback')
    throw new ApiError(400, `PromotionPlan ${namespace}/${name} is a rollback itself`);
  if (!orig.status?.apps?.some((a) => a.written))
    throw new ApiError(400, `PromotionPlan ${namespace}/${name} has not changed any application; nothing to roll back`);
  const plan: PromotionPlan = {
    apiVersion: API_VERSION,
    kind: 'PromotionPlan',
    metadata: {
      name: opts.rollbackName ?? `${name}-rollback`,
      namespace,
      labels: { 'promotions.kpromo.dev/flow': orig.spec.flow },
    },
    spec: {
      flow: orig.spec.flow,
      from: orig.spec.from,
      to: orig.spec.to,
      action: 'rollback',
      rollbackOf: name,
      candidates: [],
      ...(opts.approve ? { approved: true, ...(opts.approvedBy ? { approvedBy: opts.approvedBy } : {}) } : {}),
    },
  };
  return createObject(ctx, plan);
}
