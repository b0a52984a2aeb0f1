// The promotion pipeline: per flow, its environments as stages left to right, what runs in each, and
// per transition (stage -> next stage) what may move next and what the plan for it waits for.
//
// The backend has no route listing flows; the stage transitions come from the environments in tier
// order (adjacent pairs) and the transitions earlier plans used, each checked with GET /diff, which
// answers with the flow and the release candidates, or refuses a pair that is no transition.
import type { PromotionsApi } from './api';
import { errorStatus } from './api';
import { orderEnvironments } from './matrix';
import {
  type ApplicationSummary,
  type DiffResult,
  type EnvironmentSummary,
  type EnvironmentVersion,
  isFinalPlan,
  type PromotionPlan,
} from './types';

export interface StagePair {
  namespace: string;
  from: string;
  to: string;
  flow?: string;
}

export interface Transition {
  flow: string;
  namespace: string;
  from: string;
  to: string;
  /** Release candidates and why the others are skipped (GET /diff). */
  diff?: DiffResult;
  /** GET /diff failed for another reason than "no transition" (permissions, the controller). */
  error?: Error;
  /** The newest promotion plan of this transition that is not final. */
  openPlan?: PromotionPlan;
  /** The newest final plan of this transition. */
  lastPlan?: PromotionPlan;
}

export interface Pipeline {
  flow: string;
  namespace: string;
  stages: EnvironmentSummary[];
  /** transitions[i] goes from stages[i] to stages[i + 1] when those are a transition, else undefined. */
  transitions: Array<Transition | undefined>;
}

export interface PipelineData {
  pipelines: Pipeline[];
  environments: EnvironmentSummary[];
  applications: ApplicationSummary[];
  plans: PromotionPlan[];
}

const created = (p: PromotionPlan) => p.metadata.creationTimestamp ?? '';
const nsOf = (x: { namespace?: string }) => x.namespace ?? 'default';

/** The stage pairs worth asking /diff about: adjacent environments by tier, and every pair plans used. */
export function candidatePairs(envs: EnvironmentSummary[], plans: PromotionPlan[]): StagePair[] {
  const out = new Map<string, StagePair>();
  const add = (p: StagePair) => {
    const k = `${p.namespace}|${p.from}|${p.to}`;
    if (!out.has(k) || (p.flow && !out.get(k)?.flow)) out.set(k, p);
  };
  const byNs = new Map<string, EnvironmentSummary[]>();
  for (const e of envs) byNs.set(e.namespace, [...(byNs.get(e.namespace) ?? []), e]);
  for (const [namespace, list] of byNs) {
    const ordered = orderEnvironments(list);
    for (let i = 0; i + 1 < ordered.length; i++) add({ namespace, from: ordered[i].name, to: ordered[i + 1].name });
  }
  for (const p of plans) {
    if ((p.spec.action ?? 'promote') !== 'promote') continue;
    add({ namespace: nsOf(p.metadata), from: p.spec.from, to: p.spec.to, flow: p.spec.flow });
  }
  return [...out.values()];
}

/** /diff refuses a pair that is no transition of any flow with 400 or 404: not an error to show. */
function isNoTransition(e: unknown): boolean {
  const s = errorStatus(e);
  const msg = e instanceof Error ? e.message : '';
  return (s === 400 || s === 404) && /stage transition|no PromotionFlow|not a stage|several PromotionFlows/i.test(msg);
}

/** Chains each flow's transitions into stages left to right (tier order), with the plans of each transition. */
export function buildPipelines(
  envs: EnvironmentSummary[],
  transitions: Transition[],
  plans: PromotionPlan[],
): Pipeline[] {
  const groups = new Map<string, Transition[]>();
  for (const t of transitions) {
    const k = `${t.namespace}|${t.flow}`;
    groups.set(k, [...(groups.get(k) ?? []), t]);
  }
  const out: Pipeline[] = [];
  for (const list of groups.values()) {
    const { namespace, flow } = list[0];
    const names = new Set(list.flatMap((t) => [t.from, t.to]));
    const stages = orderEnvironments(envs.filter((e) => e.namespace === namespace && names.has(e.name)));
    const withPlans = list.map((t) => {
      const mine = plans
        .filter(
          (p) =>
            nsOf(p.metadata) === namespace &&
            p.spec.flow === flow &&
            p.spec.from === t.from &&
            p.spec.to === t.to &&
            (p.spec.action ?? 'promote') === 'promote',
        )
        .sort((a, b) => created(b).localeCompare(created(a)));
      return { ...t, openPlan: mine.find((p) => !isFinalPlan(p)), lastPlan: mine.find((p) => isFinalPlan(p)) };
    });
    out.push({
      flow,
      namespace,
      stages,
      transitions: stages
        .slice(0, -1)
        .map((s, i) => withPlans.find((t) => t.from === s.name && t.to === stages[i + 1].name)),
    });
  }
  return out.sort((a, b) => a.namespace.localeCompare(b.namespace) || a.flow.localeCompare(b.flow));
}

/** Loads everything the pipeline view shows: environments, applications, plans and one /diff per transition. */
export async function loadPipelines(api: PromotionsApi, opts: { namespace?: string } = {}): Promise<PipelineData> {
  const [environments, applications, plans] = await Promise.all([
    api.listEnvironments({ namespace: opts.namespace }),
    api.listApplications({ namespace: opts.namespace }),
    api.listPlans({ namespace: opts.namespace }),
  ]);
  const pairs = candidatePairs(environments, plans);
  const checked = await Promise.all(
    pairs.map(async (p): Promise<Transition | undefined> => {
      try {
        const diff = await api.getDiff({ namespace: p.namespace, flow: p.flow, from: p.from, to: p.to });
        return { flow: diff.flow, namespace: p.namespace, from: p.from, to: p.to, diff };
      } catch (e) {
        if (isNoTransition(e)) return undefined;
        // Unknown flow: keep the pair visible with its error when a plan named the flow.
        return p.flow
          ? {
              flow: p.flow,
              namespace: p.namespace,
              from: p.from,
              to: p.to,
              error: e instanceof Error ? e : new Error(String(e)),
            }
          : undefined;
      }
    }),
  );
  const transitions = checked.filter((t): t is Transition => !!t);
  // The same pair asked with and without a flow name answers the same transition: keep one.
  const unique = [...new Map(transitions.map((t) => [`${t.namespace}|${t.flow}|${t.from}|${t.to}`, t])).values()];
  return { pipelines: buildPipelines(environments, unique, plans), environments, applications, plans };
}

/** What an application runs in an environment. */
export function versionIn(app: ApplicationSummary, env: string): EnvironmentVersion | undefined {
  return app.versions.find((v) => v.environment === env);
}
