import type {
  Application,
  AppProgress,
  Environment,
  EnvironmentVersion,
  PromotionFlow,
  PromotionPlan,
  PromotionPlanStatus,
} from '@kpromo/api';
import { fleetPlanTooLarge, isRollback, rollbackApplications } from '@kpromo/api';
import {
  DEFAULT_TAG_PATTERN,
  flowTagPattern,
  isAdjacent,
  type Matcher,
  matchesSelector,
  stagePairs,
} from '../candidates/computeCandidates.js';
import { deliveryProblem } from '../delivery/registry.js';
import type { DeliveryMethods } from '../extension/plugin.js';
import type { CacheView } from '../kube/cacheView.js';
import { dependsOnCycle, dependsOnCycleMessage } from './orderDecisions.js';
import { ROLLBACK_OF_UID_LABEL } from './rollbackPlans.js';

export const TERMINAL_APP_PHASES = new Set<AppProgress['phase']>(['Succeeded', 'Failed', 'RolledBack']);
export const TERMINAL_PLAN_PHASES = new Set<NonNullable<PromotionPlanStatus['phase']>>([
  'Complete',
  'Incomplete',
  'Failed',
  'RolledBack',
]);

export interface ResolvedPlan {
  flow: PromotionFlow;
  fromEnv: Environment;
  toEnv: Environment;
  apps: Map<string, Application>;
  /** For rollback plans: the plan being reverted. */
  original?: PromotionPlan;
}

export type PlanValidation = { ok: true; resolved: ResolvedPlan } | { ok: false; reason: string; message: string };

/**
 * Pure check of everything a plan references, done before any side effect so that a bad plan
 * leaves nothing half-written: flow, environments, applications (and that their dependsOn form no
 * cycle), and the target Environment's delivery method (registered, configured: {@link deliveryProblem}).
 */
export function validatePlan(plan: PromotionPlan, cache: CacheView, deliveryMethods: DeliveryMethods): PlanValidation {
  const ns = plan.metadata.namespace ?? 'default';
  const s = plan.spec;
  const fail = (reason: string, message: string): PlanValidation => ({ ok: false, reason, message });
  const flow = cache.getFlow(ns, s.flow);
  if (!flow) return fail('FlowNotFound', `PromotionFlow "${s.flow}" does not exist in namespace ${ns}; fix spec.flow`);
  const fromEnv = cache.getEnvironment(ns, s.from);
  if (!fromEnv)
    return fail('EnvironmentNotFound', `Environment "${s.from}" (spec.from) does not exist in namespace ${ns}`);
  const toEnv = cache.getEnvironment(ns, s.to);
  if (!toEnv) return fail('EnvironmentNotFound', `Environment "${s.to}" (spec.to) does not exist in namespace ${ns}`);
  if (!isAdjacent(flow, s.from, s.to)) {
    return fail(
      'NotAdjacent',
      `${s.from} -> ${s.to} is not a stage transition of PromotionFlow ${s.flow}; valid: ${stagePairs(flow)
        .map((p) => `${p.from} -> ${p.to}`)
        .join(', ')}`,
    );
  }
  const apps = new Map<string, Application>();
  let original: PromotionPlan | undefined;
  let names: string[];
  if (isRollback(plan)) {
    if (!s.rollbackOf) return fail('InvalidRollback', 'spec.rollbackOf is required when action is rollback');
    original = cache.getPlan(ns, s.rollbackOf);
    if (!original)
      return fail(
        'InvalidRollback',
        `PromotionPlan "${s.rollbackOf}" (spec.rollbackOf) does not exist in namespace ${ns}`,
      );
    // Bound at creation to the plan the person (or the controller) rolled back: a plan created
    // again under that name since holds other changes, which nobody chose to undo.
    const boundTo = plan.metadata.labels?.[ROLLBACK_OF_UID_LABEL];
    if (boundTo && boundTo !== original.metadata.uid)
      return fail(
        'InvalidRollback',
        `PromotionPlan "${s.rollbackOf}" (spec.rollbackOf) is not the plan this rollback was made for: that was uid ${boundTo}, it is now uid ${original.metadata.uid ?? '(none)'} (deleted and created again); roll the new plan back with a new rollback if that is wanted`,
      );
    if (original.spec.to !== s.to || original.spec.flow !== s.flow) {
      return fail(
        'InvalidRollback',
        `plan ${s.rollbackOf} promoted ${original.spec.flow}: ${original.spec.from} -> ${original.spec.to}; a rollback must use the same flow, from and to`,
      );
    }
    if (isRollback(original)) return fail('InvalidRollback', `plan ${s.rollbackOf} is itself a rollback`);
    if (!original.status?.apps?.some((a) => a.written)) {
      return fail('NothingToRollBack', `plan ${s.rollbackOf} has not changed any application yet`);
    }
    names = rollbackApplications(plan, original);
    if (s.applications && !names.length)
      return fail(
        'NothingToRollBack',
        `plan ${s.rollbackOf} has not changed ${s.applications!.join(', ')} (spec.applications)`,
      );
  } else {
    if (!s.candidates.length) return fail('NoCandidates', 'spec.candidates is empty; nothing to promote');
    names = s.candidates.map((c) => c.application);
  }
  const missing: string[] = [];
  for (const n of names) {
    const a = cache.getApplication(ns, n);
    if (a) apps.set(n, a);
    else missing.push(n);
  }
  if (missing.length)
    return fail('ApplicationNotFound', `Application(s) ${missing.join(', ')} do not exist in namespace ${ns}`);
  // The order of delivery must be one (a plan created with kubectl is checked here, the API refuses it at once).
  const cycle = dependsOnCycle(apps);
  if (cycle) return fail('DependencyCycle', dependsOnCycleMessage(cycle));
  if (!original) {
    const governed = governanceProblems(plan, flow, apps, cache.flows(ns));
    if (governed) return fail(governed.reason, governed.message);
  }
  const delivery = deliveryProblem(deliveryMethods, toEnv);
  if (delivery) return fail('InvalidEnvironment', `Environment ${s.to}: ${delivery}`);
  // Checked before the start only: a started plan keeps the clusters it started with.
  const tooLarge = plan.status?.apps?.length ? undefined : fleetPlanTooLarge(names.length, toEnv);
  if (tooLarge) return fail('FleetPlanTooLarge', tooLarge);
  return { ok: true, resolved: { flow, fromEnv, toEnv, apps, original } };
}

/**
 * Pure: why the candidates of a promote plan are not governed by the flow it names: every candidate
 * must be selected by that flow and match its tag pattern, and no other flow of the namespace may
 * also govern the application into the same environment (a plan must not borrow a laxer flow; with
 * two, kpromo refuses rather than guess which policy is meant). Undefined when they are.
 */
export function governanceProblems(
  plan: PromotionPlan,
  flow: PromotionFlow,
  apps: ReadonlyMap<string, Application>,
  flows: readonly PromotionFlow[],
): { reason: string; message: string } | undefined {
  const s = plan.spec;
  const flowRef = `PromotionFlow ${flow.metadata.name}`;
  let tagRe: Matcher;
  try {
    tagRe = flowTagPattern(flow);
  } catch (e) {
    return { reason: 'InvalidFlow', message: `${(e as Error).message}; fix spec.tagPattern` };
  }
  const others = flows.filter(
    (f) => f.metadata.name !== flow.metadata.name && f.spec.stages.some((st) => st.environment === s.to),
  );
  const problems: string[] = [];
  let reason = '';
  const problem = (r: string, m: string) => {
    reason ||= r;
    problems.push(m);
  };
  for (const c of s.candidates) {
    const app = apps.get(c.application);
    if (!app) continue;
    if (!matchesSelector(app, flow.spec.selector)) {
      problem('NotGovernedByFlow', `${c.application} is not selected by ${flowRef} (spec.selector)`);
      continue;
    }
    if (!tagRe.test(c.from.tag))
      problem(
        'TagPatternMismatch',
        `${c.application}: tag ${c.from.tag} does not match the tag pattern of ${flowRef} (${flow.spec.tagPattern ?? DEFAULT_TAG_PATTERN})`,
      );
    const also = others.filter((f) => matchesSelector(app, f.spec.selector)).map((f) => f.metadata.name);
    if (also.length)
      problem(
        'GovernedBySeveralFlows',
        `${c.application} is governed into ${s.to} by ${flowRef} and also by PromotionFlow ${also.join(', ')}: narrow their selectors so one flow governs it`,
      );
  }
  if (!problems.length) return undefined;
  return { reason, message: `not promoted under ${flowRef}'s policy: ${problems.join('; ')}` };
}

/**
 * What the source Environment's registry answered for the tag a source workload runs without a
 * digest: the digest that tag names now (undefined: the registry has no such tag), or why it could
 * not be read.
 */
export type SourceTagDigest = { digest: string | undefined } | { error: string };

/** The version an app runs in the plan's source environment (the workload's tag and digest). */
type SourceVersionOf = (app: Application) => Pick<EnvironmentVersion, 'tag' | 'digest'> | undefined;

/**
 * Pure: the applications whose source workload runs the candidate's tag without a digest. Their
 * tag's digest is read from the source Environment's registry before the plan starts
 * ({@link checkCandidatesInSource}); a tag that differs is refused without a look-up.
 */
export function tagDigestsToRead(
  plan: PromotionPlan,
  apps: ReadonlyMap<string, Application>,
  versionOf: SourceVersionOf,
): Application[] {
  const out: Application[] = [];
  for (const c of plan.spec.candidates) {
    const app = apps.get(c.application);
    const v = app && versionOf(app);
    if (app && v?.tag && !v.digest && v.tag === c.from.tag) out.push(app);
  }
  return out;
}

/** Problems listed in one message (a condition stays readable for a release train); the rest are counted. */
const LISTED = 10;
const listed = (items: string[]) =>
  `${items.slice(0, LISTED).join('; ')}${items.length > LISTED ? ` (and ${items.length - LISTED} more)` : ''}`;

export interface SourceCheck {
  /** The plan is refused: the first problem's reason, every problem in the message. */
  refused?: { reason: 'CandidateNotInSource' | 'CandidateDigestMismatch'; message: string };
  /** Nothing refused, but the source's registry could not be read for some candidates: the plan waits. */
  unread?: string;
}

/**
 * Pure: whether the candidates of a promote plan are the versions running in its source
 * environment now (checked when a plan starts: an approver approves a version that ran there, not
 * any digest of the registry). The digest is always bound: compared with the workload's when it
 * pins one; when it runs a tag only, the tag is compared and then the digest that tag names in the
 * source Environment's registry now (`tagDigestOf`, read by the caller for {@link tagDigestsToRead}),
 * so an older build or a build that failed verification under the same tag is refused. A registry
 * that could not be read neither passes nor refuses: the plan waits (`unread`). Empty when all are.
 */
export function checkCandidatesInSource(
  plan: PromotionPlan,
  apps: ReadonlyMap<string, Application>,
  versionOf: SourceVersionOf,
  tagDigestOf: (app: Application) => SourceTagDigest | undefined = () => undefined,
): SourceCheck {
  const from = plan.spec.from;
  const registry = `the registry of Environment ${from}`;
  const problems: string[] = [];
  const unread: string[] = [];
  type Reason = NonNullable<SourceCheck['refused']>['reason'];
  let reason: Reason | undefined;
  let tagOnly = false;
  const refuse = (r: Reason, m: string) => {
    reason ??= r;
    problems.push(m);
  };
  for (const c of plan.spec.candidates) {
    const app = apps.get(c.application);
    if (!app) continue;
    const v = versionOf(app);
    const runs = v?.tag || v?.digest ? `${v.tag ?? ''}${v.digest ? `@${v.digest}` : ''}` : 'nothing';
    const candidate = `${c.from.tag}@${c.from.digest}`;
    if (v?.digest) {
      if (v.digest !== c.from.digest)
        refuse('CandidateNotInSource', `${c.application}: ${from} runs ${runs}, not the candidate ${candidate}`);
      continue;
    }
    if (!v?.tag || v.tag !== c.from.tag) {
      refuse('CandidateNotInSource', `${c.application}: ${from} runs ${runs}, not the candidate ${candidate}`);
      continue;
    }
    // A tag only: the digest is the one that tag names in the source's registry now.
    tagOnly = true;
    const byTag = `${c.application}: ${from} runs ${v.tag} by tag only`;
    const t = tagDigestOf(app);
    if (!t) unread.push(`${c.application} (${from} runs ${v.tag} by tag only): not read yet`);
    else if ('error' in t) unread.push(`${c.application} (${from} runs ${v.tag} by tag only): ${t.error}`);
    else if (!t.digest)
      refuse(
        'CandidateDigestMismatch',
        `${byTag}, and ${registry} has no tag ${v.tag} for ${app.spec.image.repository}: the candidate's ${c.from.digest} cannot be bound to what runs`,
      );
    else if (t.digest !== c.from.digest)
      refuse(
        'CandidateDigestMismatch',
        `${byTag}, and ${v.tag} names ${t.digest} in ${registry}, not the candidate's ${c.from.digest}`,
      );
  }
  if (reason) {
    const bound = tagOnly ? ` (for a workload that runs a tag only, the digest that tag names in ${registry})` : '';
    return {
      refused: {
        reason,
        message: `candidates must be the version running in ${from} when the plan starts${bound}: ${listed(problems)}; create a new plan from the candidates shown now (kpromo diff)${tagOnly ? ', which carry the digest the tag names' : ''}`,
      },
    };
  }
  if (unread.length)
    return {
      unread: `waiting to read the digest of the tag ${from} runs from ${registry} before starting (a candidate is bound to it; nothing starts until the registry answers): ${listed(unread)}`,
    };
  return {};
}

/** Plan-level outcome from per-app phases; undefined while any app is still going. */
export function planOutcome(
  apps: readonly AppProgress[],
): { phase: 'Complete' | 'Incomplete'; succeeded: number; failed: number } | undefined {
  const succeeded = apps.filter((a) => a.phase === 'Succeeded').length;
  const failed = apps.filter((a) => a.phase === 'Failed').length;
  if (apps.some((a) => !TERMINAL_APP_PHASES.has(a.phase))) return undefined;
  return { phase: failed === 0 ? 'Complete' : 'Incomplete', succeeded, failed };
}

export const ACTIVE_APP_PHASES = new Set<AppProgress['phase']>(['Copying', 'Writing', 'RollingOut', 'Verifying']);

/** Plans are served in this order when two want the same app+environment: older first, then by name. */
function planOrder(a: PromotionPlan, b: PromotionPlan): number {
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

/**
 * Pure: the other plan that holds `application` in the same Environment now, if any. Only one
 * non-terminal approved plan may promote an app into an environment at a time:
 * - a plan whose app is already in flight (Copying/Writing/RollingOut/Verifying) holds it;
 * - a plan this process saw start the app (`claims`, keyed by {@link claimKey}) holds it while its
 *   status does not show the app finished (closes the window before our own status write is cached);
 * - among plans that have not started the app yet, the older plan (creationTimestamp, then name) goes first.
 * Terminal, unapproved and deleted plans hold nothing, so a stale claim never blocks for long.
 */
export function promotionBlocker(
  plan: PromotionPlan,
  application: string,
  plans: readonly PromotionPlan[],
  claims?: ReadonlyMap<string, string>,
): PromotionPlan | undefined {
  const ns = plan.metadata.namespace;
  const claimedBy = claims?.get(claimKey(ns, plan.spec.to, application));
  for (const other of plans) {
    if (other.metadata.name === plan.metadata.name || other.metadata.namespace !== ns) continue;
    if (other.spec.to !== plan.spec.to || !other.status?.gate?.approved) continue;
    if (other.status?.phase && TERMINAL_PLAN_PHASES.has(other.status.phase)) continue;
    const entry = other.status?.apps?.find((a) => a.application === application);
    if (entry) {
      if (TERMINAL_APP_PHASES.has(entry.phase)) continue;
      if (ACTIVE_APP_PHASES.has(entry.phase) || claimedBy === other.metadata.name) return other;
      if (planOrder(other, plan) < 0) return other;
    } else if (!other.status?.apps?.length) {
      // Not started yet: it will promote the app if it is one of its candidates.
      const wants = other.spec.candidates.some((c) => c.application === application);
      if (wants && (claimedBy === other.metadata.name || planOrder(other, plan) < 0)) return other;
    }
  }
  return undefined;
}

export const claimKey = (namespace: string | undefined, environment: string, application: string) =>
  `${namespace ?? ''}/${environment}/${application}`;
