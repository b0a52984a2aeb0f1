// The promotion pipeline: per flow (GET /flows), its environments as stages left to right in the
// flow's order, what runs in each, and per transition (stage -> next stage) what may move next
// (GET /diff) and what the plan for it waits for.
import type { PromotionsApi } from './api';
import { orderEnvironments } from './matrix';
import {
  type ApplicationSummary,
  type DiffWithImages,
  type EnvironmentSummary,
  type EnvironmentVersion,
  type FlowStageView,
  type FlowView,
  isFinalPlan,
  isRollback,
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
  /** Release candidates, why the others are skipped, and the candidates' images (GET /diff). */
  diff?: DiffWithImages;
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
  /** The flow's stages whose Environment the caller can see, in the flow's order. */
  stages: EnvironmentSummary[];
  /** The flow's settings of each of `stages` (approval mode, approvers, soak time, freeze windows). */
  settings: FlowStageView[];
  /** Stages of the flow whose Environment is not visible (missing, or not readable). */
  missing: string[];
  /** Which applications the flow moves, in words. */
  selectorSummary?: string;
  /** transitions[i] goes from stages[i] to stages[i + 1] when those are a transition, else undefined. */
  transitions: Array<Transition | undefined>;
}

export interface PipelineData {
  pipelines: Pipeline[];
  flows: FlowView[];
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
    if (isRollback(p)) continue;
    add({ namespace: nsOf(p.metadata), from: p.spec.from, to: p.spec.to, flow: p.spec.flow });
  }
  return [...out.values()];
}

/** The transitions of a flow: each stage to the next, in the flow's order. */
export function flowTransitions(f: FlowView): StagePair[] {
  return f.stages
    .slice(0, -1)
    .map((s, i) => ({ namespace: f.namespace, flow: f.name, from: s.environment, to: f.stages[i + 1].environment }));
}

/** Each flow as stages left to right (its own order), with the candidates and plans of each transition. */
export function buildPipelines(
  flows: FlowView[],
  envs: EnvironmentSummary[],
  transitions: Transition[],
  plans: PromotionPlan[],
): Pipeline[] {
  return flows
    .map((f): Pipeline => {
      const known = f.stages.filter((s) => envs.some((e) => e.namespace === f.namespace && e.name === s.environment));
      const stages = known.map((s) => envs.find((e) => e.namespace === f.namespace && e.name === s.environment)!);
      const withPlans = (t: Transition): Transition => {
        const mine = plans
          .filter(
            (p) =>
              nsOf(p.metadata) === f.namespace &&
              p.spec.flow === f.name &&
              p.spec.from === t.from &&
              p.spec.to === t.to &&
              !isRollback(p),
          )
          .sort((a, b) => created(b).localeCompare(created(a)));
        return { ...t, openPlan: mine.find((p) => !isFinalPlan(p)), lastPlan: mine.find((p) => isFinalPlan(p)) };
      };
      return {
        flow: f.name,
        namespace: f.namespace,
        stages,
        settings: known,
        missing: f.stages.filter((s) => !known.includes(s)).map((s) => s.environment),
        selectorSummary: f.selectorSummary,
        transitions: stages.slice(0, -1).map((s, i) => {
          const t = transitions.find(
            (x) => x.namespace === f.namespace && x.flow === f.name && x.from === s.name && x.to === stages[i + 1].name,
          );
          return t ? withPlans(t) : undefined;
        }),
      };
    })
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.flow.localeCompare(b.flow));
}

/** Loads everything the pipeline view shows: flows, environments, applications, plans and one /diff per transition. */
export async function loadPipelines(api: PromotionsApi, opts: { namespace?: string } = {}): Promise<PipelineData> {
  const [flows, environments, applications, plans] = await Promise.all([
    api.listFlows({ namespace: opts.namespace }),
    api.listEnvironments({ namespace: opts.namespace }),
    api.listApplications({ namespace: opts.namespace }),
    api.listPlans({ namespace: opts.namespace }),
  ]);
  const visible = (ns: string, name: string) => environments.some((e) => e.namespace === ns && e.name === name);
  const transitions = await Promise.all(
    flows
      .flatMap(flowTransitions)
      .filter((p) => visible(p.namespace, p.from) && visible(p.namespace, p.to))
      .map(async (p): Promise<Transition> => {
        const t = { flow: p.flow!, namespace: p.namespace, from: p.from, to: p.to };
        try {
          return { ...t, diff: await api.getDiff({ namespace: p.namespace, flow: p.flow, from: p.from, to: p.to }) };
        } catch (e) {
          return { ...t, error: e instanceof Error ? e : new Error(String(e)) };
        }
      }),
  );
  return {
    pipelines: buildPipelines(flows, environments, transitions, plans),
    flows,
    environments,
    applications,
    plans,
  };
}

/** What an application runs in an environment. */
export function versionIn(app: ApplicationSummary, env: string): EnvironmentVersion | undefined {
  return app.versions.find((v) => v.environment === env);
}
