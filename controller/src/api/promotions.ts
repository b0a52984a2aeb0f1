import type { Application, Approval, EnvironmentVersion, PromotionPlan, StageCooldown } from '@kpromo/api';
import {
  API_VERSION,
  fleetPlanTooLarge,
  fleetTargets,
  isFleet,
  isRollback,
  overrideReasonProblem,
  rollbackApplications,
} from '@kpromo/api';
import {
  type ApplicationsQuery,
  type ApplicationView,
  type CandidateImages,
  checkInput,
  DEFAULT_SKIPPED_SHOWN,
  DiffQuery as DiffQuerySchema,
  type DiffWithImages,
  type EnvironmentView,
  EXPECT_REQUIRED,
  globMatcher,
  type ImageInfo,
  type ListResponse,
  MAX_PAGE_SIZE,
  noCandidatesMessage,
  type SkippedSummary,
  skippedSummaryOf,
  summariseSkipped,
  UID_REQUIRED,
} from '@kpromo/contract';
import type { Caller } from '../auth/identity.js';
import {
  type CandidateFilter,
  type CandidateResult,
  computeCandidates,
  type SkippedApp,
  stagePairs,
} from '../candidates/computeCandidates.js';
import { environmentTagDigest } from '../candidates/tagDigest.js';
import { versionReader } from '../candidates/versionReader.js';
import { registryEndpoint } from '../extension/credentials.js';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import { isConflict, KubeError } from '../kube/rest.js';
import { imageLabels } from '../oci/imageConfig.js';
import { orgRuleRef } from '../policy/orgGates.js';
import { type PersonMapping, personOf } from '../policy/persons.js';
import { driftText, sourceDrift } from '../reconcile/driftDecisions.js';
import { dependsOnCycle, dependsOnCycleMessage } from '../reconcile/orderDecisions.js';
import { ROLLBACK_OF_UID_LABEL, rollbackNamePrefix } from '../reconcile/rollbackPlans.js';
import { formatTimestamp } from '../reconcile/tagTemplate.js';
import { registryRepository } from '../util/imageRef.js';
import { who } from './access.js';
import { gateOf, refuseAgent, requireAgentAllows } from './agents.js';
import { kubeWriteError } from './apiError.js';
import { type ApiContext, ApiError } from './context.js';
import { ImageLabelCache, type LabelReader } from './imageLabelCache.js';
import { shownCandidatesMismatch } from './shownCandidates.js';

const nsOf = (o: { metadata: { namespace?: string } }) => o.metadata.namespace ?? '';

/**
 * Applications the caller may list that match the query's filters (and `type`, which only MCP's
 * `list` offers so far), in namespace/name order: what GET /applications and MCP `list` show.
 */
export async function findApplications(
  ctx: ApiContext,
  caller: Caller,
  q: ApplicationsQuery & { type?: NonNullable<Application['spec']['type']> },
): Promise<Application[]> {
  const apps = await ctx.access.listable(caller, 'applications', ctx.cache.applications(q.namespace), nsOf);
  const names = (q.applications ?? []).map((g) => globMatcher(g, 'applications'));
  const teams = (q.teams ?? []).map((g) => globMatcher(g, 'teams'));
  const selector = Object.entries(q.labelSelector ?? {});
  return apps
    .filter((a) => {
      if (names.length && !names.some((m) => m.test(a.metadata.name))) return false;
      if (teams.length && !teams.some((m) => m.test(a.spec.owner))) return false;
      if (q.type && (a.spec.type ?? 'service') !== q.type) return false;
      if (!selector.length) return true;
      const labels = labelsOf(a);
      return selector.every(([k, v]) => labels[k] === v);
    })
    .sort((x, y) => compareKeys(keyOf(x), keyOf(y)));
}

const labelsOf = (a: Application) => ({ ...(a.metadata.labels ?? {}), ...(a.spec.labels ?? {}) });
const keyOf = (a: Application): [string, string] => [a.metadata.namespace ?? '', a.metadata.name];
const compareKeys = (a: [string, string], b: [string, string]) =>
  a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;

/** The continue token: where the next page starts (after this namespace/name), opaque to clients. */
const encodeContinue = (k: [string, string]) => Buffer.from(JSON.stringify(k)).toString('base64url');
function decodeContinue(token: string): [string, string] {
  try {
    const k = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (Array.isArray(k) && k.length === 2 && k.every((x) => typeof x === 'string')) return k as [string, string];
  } catch {
    // falls through to the 400 below
  }
  throw new ApiError(400, 'invalid query: continue: is not a token this API returned; start again without it');
}

/**
 * Applications the caller may list, with the version running in every Environment of their
 * namespace. Without `limit`, all of them; with it, one page in namespace/name order and a
 * `continue` token while more remain (as the Kubernetes API pages lists). Versions are computed
 * only for the page.
 */
export async function listApplications(
  ctx: ApiContext,
  caller: Caller,
  q: ApplicationsQuery = {},
): Promise<ListResponse<ApplicationView>> {
  const all = await findApplications(ctx, caller, q);
  let page = all;
  let next: string | undefined;
  if (q.limit !== undefined || q.continue) {
    const after = q.continue ? decodeContinue(q.continue) : undefined;
    const start = after ? all.findIndex((a) => compareKeys(keyOf(a), after) > 0) : 0;
    const from = start < 0 ? all.length : start;
    const limit = q.limit ?? MAX_PAGE_SIZE;
    page = all.slice(from, from + limit);
    if (from + limit < all.length) next = encodeContinue(keyOf(page[page.length - 1]));
  }
  const read = versionReader(ctx.cache);
  return {
    items: page.map((a) => {
      const envs = ctx.cache.environments(a.metadata.namespace);
      return {
        namespace: a.metadata.namespace ?? '',
        name: a.metadata.name,
        owner: a.spec.owner,
        repository: a.spec.image.repository,
        labels: labelsOf(a),
        versions: envs.map((e) => ({ ...read(a, e) })),
        ...(a.spec.dependsOn?.length ? { dependsOn: [...a.spec.dependsOn] } : {}),
        ...(a.status?.drift?.length ? { drift: a.status.drift } : {}),
      };
    }),
    ...(next ? { continue: next } : {}),
    total: all.length,
  };
}

export async function listEnvironments(
  ctx: ApiContext,
  caller: Caller,
  q: { namespace?: string } = {},
): Promise<EnvironmentView[]> {
  const envs = await ctx.access.listable(caller, 'environments', ctx.cache.environments(q.namespace), nsOf);
  // The automatic stages into each environment that a cooldown holds, as their flows' status says.
  const cooldowns = new Map<string, Array<StageCooldown & { flow: string }>>();
  for (const f of ctx.cache.flows(q.namespace))
    for (const c of f.status?.cooldowns ?? []) {
      const k = `${nsOf(f)}/${c.environment}`;
      cooldowns.set(k, [...(cooldowns.get(k) ?? []), { flow: f.metadata.name, ...c }]);
    }
  return envs.map((e) => ({
    namespace: e.metadata.namespace ?? '',
    name: e.metadata.name,
    tier: e.spec.tier,
    ...(e.spec.cluster ? { cluster: e.spec.cluster } : {}),
    ...(isFleet(e)
      ? {
          clusters: fleetTargets(e).map((t) => ({
            name: t.cluster,
            ...(Object.keys(t.labels).length ? { labels: { ...t.labels } } : {}),
            targetNamespace: t.env.spec.namespace,
            delivery: t.env.spec.delivery.method,
            synced: ctx.cache.environmentSynced(t.env),
          })),
        }
      : {}),
    targetNamespace: e.spec.namespace,
    registry: e.spec.registry.host,
    delivery: e.spec.delivery.method,
    ...(publicGitUrl(e.spec.delivery.git?.repository)
      ? { gitRepository: publicGitUrl(e.spec.delivery.git?.repository) }
      : {}),
    synced: ctx.cache.environmentSynced(e),
    ...(cooldowns.get(`${nsOf(e)}/${e.metadata.name}`)
      ? { cooldowns: cooldowns.get(`${nsOf(e)}/${e.metadata.name}`) }
      : {}),
  }));
}

/** Pure: a git repository URL fit to show (http(s) or ssh, credentials removed); undefined otherwise. */
export function publicGitUrl(repository: string | undefined): string | undefined {
  if (!repository) return undefined;
  try {
    const u = new URL(repository);
    if (!['https:', 'http:', 'ssh:'].includes(u.protocol)) return undefined;
    u.username = '';
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.toString();
  } catch {
    return undefined;
  }
}

export interface DiffQuery extends CandidateFilter {
  namespace?: string;
  /** Skipped applications to list (default {@link DEFAULT_SKIPPED_SHOWN}); counts cover them all. */
  skippedLimit?: number;
  flow?: string;
  from: string;
  to: string;
}

/**
 * The contract's checks of a diff or plan query (both stages named and different, RE2 tag pattern,
 * name lists), whichever door it came through: the HTTP API parses it with the same schema first,
 * MCP and the CLI's local mode reach this with their own arguments. Same message everywhere.
 */
function checkDiffQuery(q: DiffQuery): void {
  const { namespace, flow, from, to, applications, teams, tagPattern, skippedLimit } = q;
  const r = checkInput(
    DiffQuerySchema,
    { namespace, flow, from, to, applications, teams, tagPattern, skippedLimit },
    'query',
  );
  if (!r.ok) throw new ApiError(400, r.message);
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
export type DiffAnswer = Omit<CandidateResult, 'skipped'> &
  SkippedSummary<SkippedApp> & {
    flow: string;
    /** Candidates whose source runs drift (contract DiffResult.sourceDrift). */
    sourceDrift?: Array<{ application: string; environment: string; message: string }>;
  };

/**
 * Release candidates `from` -> `to` from the cache, and the skipped applications: the first
 * `skippedLimit` (default {@link DEFAULT_SKIPPED_SHOWN}) with counts of all.
 */
export async function diff(ctx: ApiContext, caller: Caller, q: DiffQuery): Promise<DiffAnswer> {
  const ns = q.namespace ?? ctx.namespace;
  await ctx.access.require(caller, { verb: 'list', resource: 'applications', namespace: ns });
  checkDiffQuery(q);
  const flow = findFlow(ctx, ns, q.flow, q.from, q.to);
  const envs = new Map(ctx.cache.environments(ns).map((e) => [e.metadata.name, e]));
  for (const n of [q.from, q.to])
    if (!envs.has(n)) throw new ApiError(404, `Environment "${n}" not found in namespace ${ns}`);
  const apps = ctx.cache.applications(ns);
  const read = versionReader(ctx.cache);
  // A workload image with a tag but no digest: the digest that tag names in the Environment's
  // registry now (with its credentials, as the controller binds it when the plan starts), in a copy
  // (the reader's versions are shared). Only those are looked up; every other version is read as it is.
  const resolved = new Map<string, Map<Application, EnvironmentVersion>>();
  const unread = new Map<Application, string>();
  if (ctx.resolveDigest) {
    for (const e of [q.from, q.to]) {
      const env = envs.get(e)!;
      const inEnv = new Map<Application, EnvironmentVersion>();
      resolved.set(e, inEnv);
      for (const a of apps) {
        const v = read(a, env);
        if (!v.tag || v.digest) continue;
        const digest = await environmentTagDigest(ctx.resolveDigest, ctx.control, env, a, v.tag).catch((err: Error) => {
          if (e === q.from) unread.set(a, err.message);
          return undefined;
        });
        inEnv.set(a, { ...v, digest });
      }
    }
  }
  const versionOf = (a: Application, e: string) => resolved.get(e)?.get(a) ?? read(a, envs.get(e)!);
  try {
    const r = computeCandidates(flow, apps, versionOf, q.from, q.to, q);
    // A source whose registry did not answer is no candidate (its digest cannot be bound): say why.
    const byName = new Map([...unread].map(([a, m]) => [a.metadata.name, m]));
    const skipped = r.skipped.map((s) =>
      s.reason === 'NoDigest' && byName.has(s.application)
        ? {
            ...s,
            message: `${s.message}, and the registry of Environment ${q.from} could not be read for its digest: ${byName.get(s.application)}`,
          }
        : s,
    );
    // A candidate whose source runs drift is still listed (a person may mean it), but said so.
    const byApp = new Map(apps.map((a) => [a.metadata.name, a]));
    const sourceDrifted = r.candidates.flatMap((c) => {
      const d = sourceDrift(byApp.get(c.application)?.status?.drift, q.from, c.from.digest);
      return d
        ? [
            {
              application: c.application,
              environment: q.from,
              message: `drift: ${driftText(d)}; promoting it makes a version that went around kpromo the release`,
            },
          ]
        : [];
    });
    return {
      ...r,
      ...(sourceDrifted.length ? { sourceDrift: sourceDrifted } : {}),
      ...summariseSkipped(skipped, q.skippedLimit ?? DEFAULT_SKIPPED_SHOWN),
      flow: flow.metadata.name,
    };
  } catch (e) {
    throw new ApiError(400, (e as Error).message);
  }
}

/** Source labels of candidate images, shared by every answer of this process. */
const imageLabelCache = new ImageLabelCache();
/** How long GET /diff waits for labels being read before answering without them (`pending`). */
const LABEL_BUDGET_MS = 1500;

/**
 * {@link diff} with each candidate's images (the source's and the target's) and their OCI source
 * labels, read from the Environments' registries with their credentials, as the controller. Labels
 * are optional: a slow or unreadable registry costs the answer at most `budgetMs`, never an error.
 */
export async function diffWithImages(
  ctx: ApiContext,
  caller: Caller,
  q: DiffQuery,
  o: { labels?: ImageLabelCache; budgetMs?: number; read?: typeof imageLabels } = {},
): Promise<DiffWithImages> {
  const d = await diff(ctx, caller, q);
  const ns = q.namespace ?? ctx.namespace;
  const read = o.read ?? imageLabels;
  const refs: Array<{
    application: string;
    from: Omit<ImageInfo, 'labelsState'>;
    to?: Omit<ImageInfo, 'labelsState'>;
  }> = [];
  const wanted: Array<{ digest: string; read: LabelReader }> = [];
  const imageIn = (envName: string, application: string, digest: string) => {
    const env = ctx.cache.getEnvironment(ns, envName);
    const app = ctx.cache.getApplication(ns, application);
    if (!env || !app) return undefined;
    const repository = registryRepository(env.spec.registry.prefix, app.spec.image.repository);
    wanted.push({
      digest,
      read: async (signal) => read(await registryEndpoint(ctx.control, env, repository), repository, digest, signal),
    });
    return { environment: envName, registry: env.spec.registry.host, repository, digest };
  };
  for (const c of d.candidates) {
    const from = imageIn(q.from, c.application, c.from.digest);
    if (!from) continue;
    const to = c.to?.digest ? imageIn(q.to, c.application, c.to.digest) : undefined;
    refs.push({ application: c.application, from, ...(to ? { to } : {}) });
  }
  const labels = await (o.labels ?? imageLabelCache).within(wanted, o.budgetMs ?? LABEL_BUDGET_MS);
  const withLabels = (i: Omit<ImageInfo, 'labelsState'>): ImageInfo => {
    const l = labels.get(i.digest) ?? { state: 'pending' as const };
    return { ...i, labelsState: l.state, ...(l.labels && Object.keys(l.labels).length ? { labels: l.labels } : {}) };
  };
  const images: CandidateImages[] = refs.map((r) => ({
    application: r.application,
    from: withLabels(r.from),
    ...(r.to ? { to: withLabels(r.to) } : {}),
  }));
  return { ...d, images };
}

export interface CreatePlanRequest extends DiffQuery {
  name?: string;
  /** Approve right away as the caller (needs the approve verb for the target environment and `expect`). */
  approve?: boolean;
  /**
   * Per application, the source digest the caller reviewed: the plan is created only if the
   * candidates computed now are exactly these. Required with `approve`.
   */
  expect?: Record<string, string>;
}

/**
 * The approval entry a caller may add: their own name and their groups (admission checks both
 * against the request's user). System groups say nothing about who approved and are left out.
 */
export function approvalBy(caller: Caller, extra: Omit<Approval, 'user' | 'groups'> = {}): Approval {
  const groups = caller.groups.filter((g) => !g.startsWith('system:')).slice(0, 64);
  return { user: caller.username, ...(groups.length ? { groups } : {}), ...extra };
}

/** A plan to create: named, or named by the apiserver from a prefix (generateName). */
type NewPlan = Omit<PromotionPlan, 'metadata'> & {
  metadata: Omit<PromotionPlan['metadata'], 'name'> & ({ name: string } | { generateName: string });
};

/** apiserver refusals (RBAC, admission, schema) keep their message; they are the caller's to fix. */
/**
 * Writes a plan the caller was authorised to create (`access`, as the caller) with the controller's
 * own client: spec.requestedBy and approvals name the authenticated caller, and admission accepts
 * an actor other than the writer only from the controller (its username, ConfigMap
 * kpromo-controller-identity).
 */
async function createObject(ctx: ApiContext, plan: NewPlan): Promise<PromotionPlan> {
  const m = plan.metadata;
  const ref = `PromotionPlan ${m.namespace}/${'name' in m ? m.name : `${m.generateName}…`}`;
  try {
    return await ctx.control.create<PromotionPlan>(
      resourcePath(KPROMO_TYPES.PromotionPlan, plan.metadata.namespace),
      plan,
    );
  } catch (e) {
    if (isConflict(e)) throw new ApiError(409, `${ref} already exists`);
    kubeWriteError(e, `cannot create ${ref}`);
  }
}

/**
 * Computes candidates from the cache and creates a PromotionPlan for the caller (recorded in
 * spec.requestedBy) once RBAC lets them create plans there; returns at once (the controller
 * promotes once the plan's policy is met).
 */
export async function createPlan(
  ctx: ApiContext,
  caller: Caller,
  req: CreatePlanRequest,
): Promise<{ plan: PromotionPlan } & SkippedSummary<SkippedApp>> {
  const ns = req.namespace ?? ctx.namespace;
  await ctx.access.require(caller, { verb: 'create', resource: 'promotionplans', namespace: ns });
  if (req.approve) refuseAgent(caller, `approve PromotionPlans in namespace ${ns}`, AGENTS_NEVER_APPROVE);
  // The candidates are computed now, not when the caller looked: an approval binds to what was shown.
  if (req.approve && !req.expect) throw new ApiError(400, `invalid request: expect: ${EXPECT_REQUIRED}`);
  if (req.approve) await ctx.access.requireRelease(caller, 'approve', ns, req.to);
  const d = await diff(ctx, caller, { ...req, namespace: ns });
  if (!d.candidates.length) {
    throw new ApiError(400, noCandidatesMessage(req.from, req.to, d));
  }
  const mismatch = req.expect && shownCandidatesMismatch(d.candidates, req.expect, req.from, req.to);
  if (mismatch) throw new ApiError(409, mismatch);
  // Refused here as the controller would refuse it at start, before a plan is created for nothing.
  const to = ctx.cache.getEnvironment(ns, req.to);
  const tooLarge = to && fleetPlanTooLarge(d.candidates.length, to);
  if (tooLarge) throw new ApiError(400, tooLarge);
  refuseDependsOnCycle(
    ctx,
    ns,
    d.candidates.map((c) => c.application),
  );
  await checkAgentPlan(ctx, caller, ns, req, d.flow, d.candidates.length);
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
      requestedBy: caller.username,
      ...(caller.agent ? { requestedByAgent: caller.agent.name } : {}),
      ...(req.approve ? { approvals: [approvalBy(caller)] } : {}),
    },
  };
  return { plan: await createObject(ctx, plan), ...skippedSummaryOf(d) };
}

const AGENTS_NEVER_APPROVE =
  'an agent never approves: its approval would not count (four-eyes, count), and a gated stage always needs a person; create the plan without approving it (into a non-gated stage it runs at once, into a gated one it waits for a person)';

/**
 * An agent's plan: the agent half of its rights (AgentPolicy). Into a non-gated (approval: auto)
 * stage the plan runs without a person, so it is a promotion: the policy must allow `promote`, and
 * whoever the agent acts as must hold the approve verb there (RBAC, as for approving it). Into a
 * gated stage it is `plan`: it waits for a person's approval.
 */
async function checkAgentPlan(
  ctx: ApiContext,
  caller: Caller,
  ns: string,
  req: Pick<CreatePlanRequest, 'to'>,
  flow: string,
  applications: number,
): Promise<void> {
  if (!caller.agent) return;
  const gatedBy = gateOf(ctx.cache.getFlow(ns, flow), req.to);
  const operation = gatedBy ? 'plan' : 'promote';
  await requireAgentAllows(ctx, caller, { operation, namespace: ns, environment: req.to, applications, gatedBy });
  if (operation === 'promote') await ctx.access.requireRelease(caller, 'approve', ns, req.to);
}

/**
 * A plan whose applications' dependsOn form a cycle has no order to run in: refused before it is
 * created, with the message the controller gives a plan created around the API (validatePlan).
 */
function refuseDependsOnCycle(ctx: ApiContext, ns: string, applications: readonly string[]): void {
  const apps = new Map(
    applications.flatMap((n) => ctx.cache.getApplication(ns, n) ?? []).map((a) => [a.metadata.name, a]),
  );
  const cycle = dependsOnCycle(apps);
  if (cycle) throw new ApiError(400, dependsOnCycleMessage(cycle));
}

async function readPlan(
  ctx: ApiContext,
  caller: Caller,
  ns: string,
  name: string,
  o: { cached?: boolean } = {},
): Promise<PromotionPlan> {
  const missing = `PromotionPlan ${ns}/${name} not found`;
  await ctx.access.requireGet(caller, 'promotionplans', ns, name, missing);
  const p =
    (o.cached ? ctx.cache.getPlan(ns, name) : undefined) ??
    (await ctx.control.getOrUndefined<PromotionPlan>(resourcePath(KPROMO_TYPES.PromotionPlan, ns, name)));
  if (!p) throw new ApiError(404, missing);
  return p;
}

/**
 * The plan with its live status (read through to the apiserver so callers see their own writes), or
 * with `cached` from the watch cache (milliseconds behind; a 500-app plan's status is ~200 KiB to
 * fetch again), falling back to the apiserver for a plan the cache has not seen yet.
 */
export function getPlan(
  ctx: ApiContext,
  caller: Caller,
  namespace: string,
  name: string,
  o: { cached?: boolean } = {},
): Promise<PromotionPlan> {
  return readPlan(ctx, caller, namespace, name, o);
}

export async function listPlans(
  ctx: ApiContext,
  caller: Caller,
  q: { namespace?: string } = {},
): Promise<PromotionPlan[]> {
  return ctx.access.listable(caller, 'promotionplans', ctx.cache.plans(q.namespace), nsOf);
}

export interface ApproveOptions {
  /** Emergency: run despite a freeze window or a line stop (needs the override-freeze verb and overrideReason). */
  overrideFreeze?: boolean;
  /** Why, required with overrideFreeze: at least a sentence (packages/api/src/overrideReason.ts); kept trimmed. */
  overrideReason?: string;
  comment?: string;
  /**
   * metadata.uid of the plan the caller was shown: a plan of that name with another uid (deleted and
   * created again since) is a 409, never approved in their name. Required for an approval (400
   * without); optional in the type so every door hands on what it got and hears the same refusal.
   */
  uid?: string;
}

/**
 * The 409 for an approval (or, with `before` continuing, a continuation) of a plan that is no longer
 * the one the caller reviewed.
 */
export function stalePlanMessage(
  ref: string,
  shown: string,
  current: string | undefined,
  before: 'approving' | 'continuing' | 'rolling back' = 'approving',
): string {
  return `${ref} changed since you opened it: you reviewed uid ${shown}, it is now uid ${current ?? '(none)'} (deleted and created again, perhaps with other candidates); review it again before ${before}`;
}

/**
 * Everything {@link approvePlan} checks on the plan as read, as the caller, before it writes: the
 * uid the caller reviewed (required), an override's reason (overrideReason, a sentence at least),
 * the release verb (approve, or rollback for a rollback plan) for the target environment,
 * override-freeze when asked, `patch` on the plan, and that the caller's approval is still missing
 * and the plan still waits for one. A door that asks a person to confirm (MCP) asks this first, so
 * nobody confirms what would be refused.
 */
export async function checkApproval(
  ctx: ApiContext,
  caller: Caller,
  p: PromotionPlan,
  opts: ApproveOptions = {},
): Promise<void> {
  const namespace = p.metadata.namespace ?? '';
  const name = p.metadata.name;
  const ref = `PromotionPlan ${namespace}/${name}`;
  refuseAgent(caller, `approve ${ref}`, AGENTS_NEVER_APPROVE);
  if (!opts.uid) throw new ApiError(400, `${ref}: uid ${UID_REQUIRED}`);
  if (opts.uid !== p.metadata.uid) throw new ApiError(409, stalePlanMessage(ref, opts.uid, p.metadata.uid));
  const reason = overrideReasonProblem(opts);
  if (reason) throw new ApiError(400, `${ref}: overrideReason ${reason}`);
  const verb = isRollback(p) ? 'rollback' : 'approve';
  await ctx.access.requireRelease(caller, verb, namespace, p.spec.to);
  if (opts.overrideFreeze) await ctx.access.requireRelease(caller, 'override-freeze', namespace, p.spec.to);
  // kubectl needs patch on the plan to add an approval; so does every other door.
  await ctx.access.require(caller, { verb: 'patch', resource: 'promotionplans', namespace, name });
  const approvals = p.spec.approvals ?? [];
  // One person, one approval: the same human under another door's name would not count again.
  const me = personOf(caller.username, ctx.persons);
  const mine = approvals.find((a) => personOf(a.user, ctx.persons) === me);
  if (mine)
    throw new ApiError(
      409,
      mine.user === caller.username
        ? `${ref} is already approved by ${who(caller)}`
        : `${ref} is already approved by ${me} (as ${mine.user}); a second approval of one person does not count`,
    );
  const fourEyes = selfApprovalRefusal(p, me, ctx.persons);
  if (fourEyes) throw new ApiError(403, `${ref}: ${fourEyes}`);
  if (p.status?.gate?.approved && !opts.overrideFreeze)
    throw new ApiError(
      409,
      `${ref} is already approved by ${approvals.map((a) => a.user).join(', ') || 'policy (automatic stage)'} (phase ${p.status?.phase ?? 'Pending'}); create a new plan to promote again`,
    );
}

/**
 * Why the person `me` may not approve their own plan, when an org rule forbids it (four eyes, as the
 * controller recorded the rules in status.gate.orgRules); undefined otherwise. The flow's own
 * forbidSelfApproval is left to the gate: the approval is recorded and does not count.
 */
export function selfApprovalRefusal(p: PromotionPlan, me: string, persons?: PersonMapping): string | undefined {
  const requester = p.status?.gate?.requestedByPerson ?? (p.spec.requestedBy && personOf(p.spec.requestedBy, persons));
  if (!requester || requester !== me) return undefined;
  const rule = p.status?.gate?.orgRules?.find((r) => r.field.endsWith('.approvals.forbidSelfApproval'));
  if (!rule) return undefined;
  return `${me} requested this plan, and ${orgRuleRef(rule)} (${rule.field}) forbids approving your own plan into ${p.spec.to}: another person must approve`;
}

/**
 * Everything {@link rollbackPlan} checks on the plan to roll back, as the caller, before it
 * creates anything: with approve, the uid of the plan the caller reviewed (required: approving a
 * rollback by name alone would undo whatever plan holds the name when the request arrives); any uid
 * sent must be the plan's (409 otherwise); `create` on plans, the rollback verb for the target
 * environment when the rollback is approved at once, and that the plan is a promotion that changed
 * something. A door that asks a person to confirm (MCP) asks this first.
 */
export async function checkRollback(
  ctx: ApiContext,
  caller: Caller,
  orig: PromotionPlan,
  opts: { approve?: boolean; uid?: string } = {},
): Promise<void> {
  const namespace = orig.metadata.namespace ?? '';
  const ref = `PromotionPlan ${namespace}/${orig.metadata.name}`;
  if (opts.approve && !opts.uid) throw new ApiError(400, `${ref}: uid ${UID_REQUIRED}`);
  if (opts.uid && opts.uid !== orig.metadata.uid)
    throw new ApiError(409, stalePlanMessage(ref, opts.uid, orig.metadata.uid, 'rolling back'));
  await ctx.access.require(caller, { verb: 'create', resource: 'promotionplans', namespace });
  if (opts.approve) await ctx.access.requireRelease(caller, 'rollback', namespace, orig.spec.to);
  if (isRollback(orig)) throw new ApiError(400, `${ref} is a rollback itself`);
  if (!orig.status?.apps?.some((a) => a.written))
    throw new ApiError(400, `${ref} has not changed any application; nothing to roll back`);
  if (caller.agent) {
    if (opts.approve) refuseAgent(caller, `approve the rollback of ${ref}`, AGENTS_NEVER_APPROVE);
    const applications = rollbackApplications({ spec: {} }, orig).length;
    const gatedBy = gateOf(ctx.cache.getFlow(namespace, orig.spec.flow), orig.spec.to);
    await requireAgentAllows(ctx, caller, {
      operation: 'rollback',
      namespace,
      environment: orig.spec.to,
      applications,
      gatedBy,
    });
    // Into a non-gated stage it runs without a person: whoever the agent acts as needs the verb.
    if (!gatedBy) await ctx.access.requireRelease(caller, 'rollback', namespace, orig.spec.to);
  }
}

/**
 * Adds the caller's approval to a plan after the checks admission makes for kubectl, as the caller:
 * RBAC `patch` on the plan and the release verb (approve, or rollback) for its target environment,
 * override-freeze when asked; the entry names the caller and their authenticated groups and the uid
 * they reviewed. Approving twice, or a plan whose policy is already met, is a 409 so nobody believes
 * they started a second run.
 */
export async function approvePlan(
  ctx: ApiContext,
  caller: Caller,
  namespace: string,
  name: string,
  opts: ApproveOptions = {},
): Promise<PromotionPlan> {
  const ref = `PromotionPlan ${namespace}/${name}`;
  // A status write by the controller between our read and write is harmless; another approval
  // landing meanwhile makes the test below fail, and we re-read and append after it.
  for (let attempt = 1; ; attempt++) {
    const p = await readPlan(ctx, caller, namespace, name);
    await checkApproval(ctx, caller, p, opts);
    // Bound to the content read above: admission refuses it on a plan with another uid.
    const entry = approvalBy(caller, {
      ...(opts.overrideFreeze ? { overrideFreeze: true, overrideReason: opts.overrideReason?.trim() } : {}),
      ...(opts.comment ? { comment: opts.comment } : {}),
      ...(p.metadata.uid ? { planUID: p.metadata.uid } : {}),
    });
    const ops = p.spec.approvals
      ? [
          { op: 'test', path: '/spec/approvals', value: p.spec.approvals },
          { op: 'add', path: '/spec/approvals/-', value: entry },
        ]
      : // Had someone else added the first approval meanwhile, this add would replace it, which the
        // schema's append-only rule refuses (422): we re-read then.
        [{ op: 'add', path: '/spec/approvals', value: [entry] }];
    try {
      return await ctx.control.jsonPatch<PromotionPlan>(resourcePath(KPROMO_TYPES.PromotionPlan, namespace, name), ops);
    } catch (e) {
      // Admission's refusal of our planUID: the plan was replaced between our read and our write.
      if (e instanceof KubeError && /must name the plan it approves/.test(e.message))
        throw new ApiError(409, stalePlanMessage(ref, opts.uid ?? '', undefined));
      const raced = isConflict(e) || (e instanceof KubeError && e.status === 422 && /test|append/i.test(e.message));
      if (raced && attempt < 3) continue;
      if (raced) throw new ApiError(409, `${ref} keeps changing (concurrent approvals); re-read it and retry`);
      kubeWriteError(e, `cannot approve ${ref}`);
    }
  }
}

/**
 * Creates a rollback plan restoring the versions that `name` replaced, approved by the caller if
 * asked (then `uid`, the plan the caller reviewed, is required). Named by the caller, or generated
 * from `<name>-rollback-` like the controller's automatic rollbacks, so a plan squatting a
 * predictable name blocks nobody; the name is in the plan returned. Written by the controller, it
 * is labelled with the uid of the plan rolled back and does not start if that plan is recreated
 * meanwhile (planDecisions.ts).
 */
export async function rollbackPlan(
  ctx: ApiContext,
  caller: Caller,
  namespace: string,
  name: string,
  opts: { approve?: boolean; rollbackName?: string; uid?: string } = {},
): Promise<PromotionPlan> {
  const orig = await readPlan(ctx, caller, namespace, name);
  await checkRollback(ctx, caller, orig, opts);
  refuseDependsOnCycle(ctx, namespace, rollbackApplications({ spec: {} }, orig));
  const plan: NewPlan = {
    apiVersion: API_VERSION,
    kind: 'PromotionPlan',
    metadata: {
      ...(opts.rollbackName ? { name: opts.rollbackName } : { generateName: rollbackNamePrefix(name) }),
      namespace,
      labels: {
        'promotions.kpromo.dev/flow': orig.spec.flow,
        // Only the controller may set it (admission); the CLI writes as its user, checked at the click only.
        ...(ctx.asController && orig.metadata.uid ? { [ROLLBACK_OF_UID_LABEL]: orig.metadata.uid } : {}),
      },
    },
    spec: {
      flow: orig.spec.flow,
      from: orig.spec.from,
      to: orig.spec.to,
      action: 'rollback',
      rollbackOf: name,
      candidates: [],
      requestedBy: caller.username,
      ...(caller.agent ? { requestedByAgent: caller.agent.name } : {}),
      ...(opts.approve ? { approvals: [approvalBy(caller)] } : {}),
    },
  };
  return createObject(ctx, plan);
}
