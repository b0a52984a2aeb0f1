import { API_VERSION, type Candidate, type PromotionFlow, type PromotionPlan, type StageCooldown } from '@kpromo/api';
import { computeCandidates, stagePairs } from '../candidates/computeCandidates.js';
import { versionReader } from '../candidates/versionReader.js';
import type { CacheView } from '../kube/cacheView.js';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import { isConflict, type KubeRest } from '../kube/rest.js';
import { stageApprovalMode } from '../policy/approvalPolicy.js';
import { parseDuration } from '../policy/duration.js';
import { cooldownDecision, sourceChangedAt, stageCooldown } from './cooldownDecisions.js';
import { sourceDrift } from './driftDecisions.js';
import { TERMINAL_PLAN_PHASES } from './planDecisions.js';
import { formatTimestamp } from './tagTemplate.js';

export const AUTO_LABEL = 'promotions.kpromo.dev/auto';
export const FLOW_LABEL = 'promotions.kpromo.dev/flow';
const DEFAULT_DEBOUNCE_MS = 30_000;

/** What the candidates of one stage transition looked like, and since when (for debouncing). */
export interface SeenCandidates {
  fingerprint: string;
  since: number;
}

export const fingerprint = (cs: readonly Candidate[]) =>
  cs
    .map((c) => `${c.application}@${c.from.digest}`)
    .sort()
    .join(',');

/** Pure: why `to` takes no automatic plans (a manual or paused stage), or undefined if it may. */
export function autoStageRefusal(flow: PromotionFlow, to: string): string | undefined {
  const stage = flow.spec.stages.find((s) => s.environment === to);
  if (!stage || stageApprovalMode(flow.spec.approval, stage.approval) !== 'auto') return 'manual stage';
  if (stage.autoPromotion?.paused) return 'automatic promotion is paused';
  return undefined;
}

export type AutoDecision =
  | { create: true; candidates: Candidate[] }
  | {
      create: false;
      why: string;
      recheckInMs?: number;
      /** The stage's cooldown holds the plan: until when, and what it will take (status.cooldowns). */
      cooldown?: { until: number; takes: readonly Candidate[] };
    };

/**
 * Pure: whether to create an automatic plan into `to` now. One open automatic plan per flow stage;
 * the same candidates as the last automatic plan are not tried again, so a failed promotion does not
 * loop; a stage with a cooldown waits until its source has been quiet that long
 * ({@link cooldownDecision}); candidates must have stayed the same for the debounce time (a release
 * bundle lands as many image updates).
 */
export function autoPlanDecision(input: {
  flow: PromotionFlow;
  to: string;
  candidates: readonly Candidate[];
  plans: readonly PromotionPlan[];
  seen: SeenCandidates | undefined;
  /** When the newest candidate version appeared in the source ({@link sourceChangedAt}); default now. */
  sourceChangedAt?: number;
  now: number;
}): AutoDecision {
  const { flow, to } = input;
  const refusal = autoStageRefusal(flow, to);
  if (refusal) return { create: false, why: refusal };
  const stage = flow.spec.stages.find((s) => s.environment === to)!;
  const mine = input.plans.filter(
    (p) =>
      p.metadata.labels?.[AUTO_LABEL] === 'true' &&
      p.spec.flow === flow.metadata.name &&
      p.spec.to === to &&
      (p.spec.action ?? 'promote') === 'promote',
  );
  const open = mine.find((p) => !(p.status?.phase && TERMINAL_PLAN_PHASES.has(p.status.phase)));
  const cooldown = cooldownDecision({
    stage,
    candidates: input.candidates,
    sourceChangedAt: input.sourceChangedAt ?? input.now,
    now: input.now,
    running: open?.metadata.name,
  });
  if (cooldown.action === 'nothing') return { create: false, why: cooldown.why };
  const fp = fingerprint(input.candidates);
  const last = [...mine].sort((a, b) =>
    (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? ''),
  )[0];
  if (last && fingerprint(last.spec.candidates) === fp)
    return { create: false, why: `plan ${last.metadata.name} already tried these candidates` };
  if (cooldown.action === 'wait')
    return {
      create: false,
      why: 'cooling down',
      recheckInMs: cooldown.until - input.now,
      cooldown: { until: cooldown.until, takes: cooldown.takes },
    };
  const debounce = stage.autoPromotion?.debounce ? parseDuration(stage.autoPromotion.debounce) : DEFAULT_DEBOUNCE_MS;
  const since = input.seen?.fingerprint === fp ? input.seen.since : input.now;
  if (input.now - since < debounce)
    return { create: false, why: 'debouncing', recheckInMs: debounce - (input.now - since) };
  return { create: true, candidates: [...input.candidates] };
}

/**
 * Creates automatic plans for the auto stages of a flow (leader only). The plan needs no approval
 * (its stage is automatic) but waits for freezes and soak time like any other. Answers the stages
 * whose cooldown holds their plan (for the flow status) and when to look again.
 */
export async function autoPromote(
  cache: CacheView,
  control: KubeRest,
  seen: Map<string, SeenCandidates>,
  namespace: string,
  name: string,
  now = new Date(),
): Promise<{ requeueAfterMs?: number; created: string[]; cooldowns: StageCooldown[] }> {
  const flow = cache.getFlow(namespace, name);
  const created: string[] = [];
  const cooldowns: StageCooldown[] = [];
  if (!flow) return { created, cooldowns };
  const envs = new Map(cache.environments(namespace).map((e) => [e.metadata.name, e]));
  let requeue: number | undefined;
  const read = versionReader(cache);
  for (const { from, to } of stagePairs(flow)) {
    // Most stages are manual: skip them before computing candidates (a pass over every app).
    if (autoStageRefusal(flow, to)) continue;
    const key = `${namespace}/${name}/${to}`;
    const fromEnv = envs.get(from);
    const toEnv = envs.get(to);
    if (!fromEnv || !toEnv || !cache.environmentSynced(fromEnv) || !cache.environmentSynced(toEnv)) continue;
    let candidates: Candidate[];
    try {
      candidates = computeCandidates(
        flow,
        cache.applications(namespace),
        (a, e) => read(a, envs.get(e)!),
        from,
        to,
      ).candidates;
    } catch {
      continue; // the flow status reports invalid flows
    }
    // An automatic stage never promotes a version that went around kpromo (drift in the source,
    // docs/drift.md): a person may, with GET /diff saying so.
    candidates = candidates.filter(
      (c) => !sourceDrift(cache.getApplication(namespace, c.application)?.status?.drift, from, c.from.digest),
    );
    const fp = fingerprint(candidates);
    const firstSeen = seen.get(key)?.fingerprint === fp ? seen.get(key)!.since : +now;
    const d = autoPlanDecision({
      flow,
      to,
      candidates,
      plans: cache.plans(namespace),
      seen: seen.get(key),
      sourceChangedAt: sourceChangedAt(candidates, (a) => cache.getApplication(namespace, a), from, firstSeen),
      now: +now,
    });
    if (seen.get(key)?.fingerprint !== fp) seen.set(key, { fingerprint: fp, since: +now });
    if (!d.create) {
      const stage = flow.spec.stages.find((s) => s.environment === to)!;
      if (d.cooldown) cooldowns.push(stageCooldown(stage, from, d.cooldown, +now));
      if (d.recheckInMs !== undefined) requeue = Math.min(requeue ?? Infinity, d.recheckInMs);
      continue;
    }
    const plan: PromotionPlan = {
      apiVersion: API_VERSION,
      kind: 'PromotionPlan',
      metadata: {
        name: `${name}-${to}-auto-${formatTimestamp(now).toLowerCase()}`,
        namespace,
        labels: { [FLOW_LABEL]: name, [AUTO_LABEL]: 'true' },
      },
      spec: { flow: name, from, to, action: 'promote', candidates: d.candidates },
    };
    try {
      await control.create(resourcePath(KPROMO_TYPES.PromotionPlan, namespace), plan);
      created.push(plan.metadata.name);
    } catch (e) {
      if (!isConflict(e)) throw e; // same name this second: created already
    }
  }
  return { created, cooldowns, ...(requeue !== undefined ? { requeueAfterMs: Math.max(requeue, 1_000) } : {}) };
}
