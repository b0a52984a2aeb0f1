import {
  APP_PHASES,
  AppProgress as AppProgressSchema,
  Approval,
  AutomaticRollback,
  isRollback,
  isTerminalPlan,
  OrgRuleApplied,
  PLAN_PHASES,
  PlanGate,
  type PromotionPlan,
  PullRequestRecord,
  PullRequestReview,
  rollbackApplications,
  SignatureState,
  SoakReset,
  StringEnum,
  TERMINAL_WAVE_PHASES,
  WaveContinuation,
  WaveProgress,
} from '@kpromo/api';
import { type Static, Type } from '@sinclair/typebox';
import { PromotionPlanObject } from './views.js';

const PlanGateApprover = PlanGate.properties.approvers.items;

const Waiting = 'Waiting' as const;

/**
 * One approval of a plan: the user from spec.approvals (what they asked for) with what the
 * controller observed in status.gate (when it saw the approval, the person it judged it as,
 * whether it counts for the policy and why not).
 */
export const PlanApprover = Type.Composite(
  [
    Type.Pick(Approval, ['user', 'groups', 'overrideFreeze', 'overrideReason', 'comment']),
    Type.Partial(Type.Pick(PlanGateApprover, ['observedAt', 'person', 'counted', 'why'])),
  ],
  { $id: 'PlanApprover' },
);

/** One wave of a fleet plan with its counts, as every door shows it. */
export const PlanWave = Type.Composite(
  [
    Type.Omit(WaveProgress, ['succeeded', 'failed', 'failureBudget']),
    Type.Object({
      succeeded: Type.Integer({
        minimum: 0,
        description:
          "Clusters where every application succeeded: the wave's own count once judged, else its clusters' so far.",
      }),
      failed: Type.Integer({ minimum: 0, description: 'Clusters where an application failed.' }),
      budget: Type.Integer({ minimum: 0, description: 'Clusters of the wave that may fail without failing it.' }),
      current: Type.Boolean({ description: 'The first wave not Succeeded, Failed or Halted.' }),
      pendingContinuation: Type.Optional(
        Type.Pick(WaveContinuation, ['user', 'comment'], {
          description: 'A continuation of this wave in spec.continuations the controller has not acted on yet.',
        }),
      ),
    }),
  ],
  { $id: 'PlanWave' },
);

/** A candidate's signature verdict: the copy-time one, else the one judged while the plan waited. */
export const PlanSignature = Type.Composite(
  [Type.Object({ application: Type.String() }), Type.Pick(SignatureState, ['digest', 'verdict', 'mode', 'message'])],
  { $id: 'PlanSignature' },
);

/**
 * One review (or the merge) of the plan's pull request: whether it counts toward the stage's
 * approval policy and, when not, why — the forge's side (not kpromo's commit, RBAC) or the policy's
 * (the requester's own, the same person twice, not a required approver).
 */
export const PlanPullRequestReview = Type.Composite(
  [
    Type.Pick(PullRequestReview, ['login', 'user', 'state', 'merger']),
    Type.Object({
      counts: Type.Boolean({
        description:
          "Offered to the stage's approval policy (an approval of kpromo's commit by someone RBAC lets approve) and counted by it (status.gate.approvers).",
      }),
      why: Type.Optional(Type.String({ description: 'Why it does not count.' })),
    }),
  ],
  { $id: 'PlanPullRequestReview' },
);

/**
 * The pull request the plan promotes through (Environment delivery.git.pullRequest; status.pullRequest):
 * its link, state, which reviews count and the merge.
 */
export const PlanPullRequest = Type.Composite(
  [
    Type.Pick(PullRequestRecord, [
      'forge',
      'repository',
      'branch',
      'base',
      'number',
      'url',
      'state',
      'merged',
      'message',
    ]),
    Type.Object({
      reviews: Type.Array(PlanPullRequestReview, {
        description: "Each reviewer's standing review, then the merge, as the controller last read them.",
      }),
    }),
  ],
  {
    $id: 'PlanPullRequest',
    description:
      'The pull request the plan promotes through (Environment delivery.git.pullRequest; status.pullRequest): its link, state, which reviews count and the merge.',
  },
);

/**
 * The plan's one read model: per-application progress, what its gate says, its waves, signatures,
 * line stop, automatic rollbacks and the pull request it promotes through. The portal, the backend, the CLI, MCP, the exporter and the
 * catalog render this; none projects status itself.
 */
export const PlanProgress = Type.Object(
  {
    namespace: Type.String(),
    name: Type.String(),
    action: StringEnum(['promote', 'rollback'] as const),
    isRollback: Type.Boolean({ description: 'spec.action is rollback.' }),
    from: Type.String(),
    to: Type.String(),
    requestedBy: Type.Optional(Type.String({ description: 'Who created the plan (spec.requestedBy).' })),
    requestedByAgent: Type.Optional(
      Type.String({
        description:
          'The agent that created the plan for requestedBy (spec.requestedByAgent), recorded by the controller.',
      }),
    ),
    requestedByPerson: Type.Optional(
      Type.String({
        description: 'The person the controller judged spec.requestedBy as (status.gate.requestedByPerson).',
      }),
    ),
    rollbackOf: Type.Optional(Type.String({ description: 'The plan this one rolls back (spec.rollbackOf).' })),
    affectedApplications: Type.Array(Type.String(), {
      description:
        "What the plan changes: a promotion's candidates; a rollback's applications, once started those it restores (status.apps), before that those the rolled-back plan wrote (narrowed to spec.applications) when that plan was at hand, else spec.applications.",
    }),
    approved: Type.Boolean({ description: 'The approval policy of the target stage is met (status.gate.approved).' }),
    approvers: Type.Array(PlanApprover, { description: 'spec.approvals in order, with what status.gate observed.' }),
    waitingFor: Type.Optional(Type.String({ description: 'Who still must approve, in words.' })),
    frozen: Type.Optional(PlanGate.properties.frozen),
    eligibleAt: Type.Optional(Type.String({ description: 'When every candidate has soaked long enough.' })),
    soakResets: Type.Optional(
      Type.Array(SoakReset, {
        description:
          'Why and when alerts or failed check samples in the source restarted the soak the plan waits on (status.soakResets), oldest first: the soak counts from the latest.',
      }),
    ),
    lineStopped: Type.Optional(PlanGate.properties.lineStopped),
    requiredApprovals: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          "Distinct approvals the target stage needs (status.gate.required): the stricter of the flow's and the org rules'.",
      }),
    ),
    orgRules: Type.Optional(
      Type.Array(OrgRuleApplied, {
        description:
          'The org rules (OrgPolicy) that apply to the target stage, each with what the flow has itself and whether it decides (status.gate.orgRules).',
      }),
    ),
    phase: StringEnum(PLAN_PHASES),
    done: Type.Boolean({ description: 'The phase is final: nothing about the plan changes any more.' }),
    succeeded: Type.Integer({ minimum: 0 }),
    failed: Type.Integer({ minimum: 0 }),
    total: Type.Integer({ minimum: 0 }),
    apps: Type.Array(
      Type.Composite([
        Type.Partial(Type.Omit(AppProgressSchema, ['application', 'phase'])),
        Type.Object({
          application: Type.String(),
          phase: StringEnum([...APP_PHASES, Waiting]),
          after: Type.Optional(
            Type.Array(Type.String(), {
              description:
                'The applications of the plan this one starts after (status.order: their dependsOn; in a rollback, those that depend on it), known before the plan starts.',
            }),
          ),
          step: Type.Optional(
            Type.Integer({
              minimum: 1,
              description:
                'Its position in the order inside the release: 1 starts at once, n after every app it follows (n-1 at most). Absent when the plan declares no order.',
            }),
          ),
        }),
      ]),
    ),
    signatures: Type.Array(PlanSignature, { description: 'Per candidate with a verdict, in candidate order.' }),
    waves: Type.Array(PlanWave, { description: 'Fleet plans: the waves in order; none for a plan into one cluster.' }),
    currentWave: Type.Optional(Type.String({ description: 'Fleet plans: the first wave not final.' })),
    automaticRollbacks: Type.Array(AutomaticRollback, {
      description: 'Rollback plans a failed verification caused (status.automaticRollbacks).',
    }),
    pullRequest: Type.Optional(PlanPullRequest),
  },
  { $id: 'PlanProgress' },
);

export const PlanDetails = Type.Object({ plan: PromotionPlanObject, progress: PlanProgress }, { $id: 'PlanDetails' });

export type PlanApprover = Static<typeof PlanApprover>;
export type PlanWave = Static<typeof PlanWave>;
export type PlanSignature = Static<typeof PlanSignature>;
export type PlanProgress = Static<typeof PlanProgress>;
export type PlanPullRequest = Static<typeof PlanPullRequest>;
export type PlanPullRequestReview = Static<typeof PlanPullRequestReview>;
export interface PlanDetails {
  plan: PromotionPlan;
  progress: PlanProgress;
}

/** The plan's approvals (spec.approvals) with what the controller observed about each (status.gate.approvers). */
export function planApprovers(plan: PromotionPlan): PlanApprover[] {
  const seen = new Map((plan.status?.gate?.approvers ?? []).map((a) => [a.user, a]));
  return (plan.spec.approvals ?? []).map((a) => {
    const g = seen.get(a.user);
    return {
      user: a.user,
      ...(a.groups?.length ? { groups: [...a.groups] } : {}),
      ...(a.overrideFreeze ? { overrideFreeze: true } : {}),
      ...(a.overrideReason ? { overrideReason: a.overrideReason } : {}),
      ...(a.comment ? { comment: a.comment } : {}),
      ...(g?.observedAt ? { observedAt: g.observedAt } : {}),
      ...(g?.person ? { person: g.person } : {}),
      ...(g ? { counted: g.counted } : {}),
      ...(g?.why ? { why: g.why } : {}),
    };
  });
}

/**
 * The plan's pull request with each review judged: one not offered to the policy says why
 * (status.pullRequest.reviews[].why); one offered counts as status.gate.approvers says (each user is
 * offered once: a later entry of the same user counts nothing; none judged there when the stage
 * approves in kpromo, whose gate does not list the forge's reviews).
 */
export function planPullRequest(plan: PromotionPlan): PlanPullRequest | undefined {
  const rec = plan.status?.pullRequest;
  if (!rec) return undefined;
  // The forge's entries come after kpromo's in the gate (approvalSource both): the last one is theirs.
  const judged = new Map((plan.status?.gate?.approvers ?? []).map((a) => [a.user, a]));
  const offered = new Map<string, PullRequestReview>();
  const reviews = (rec.reviews ?? []).map((r): PlanPullRequestReview => {
    const earlier = offered.get(r.user);
    if (r.eligible && !earlier) offered.set(r.user, r);
    const g = judged.get(r.user);
    const why = !r.eligible
      ? (r.why ?? 'not offered to the approval policy')
      : earlier
        ? `${r.user} is offered once: their ${earlier.merger ? 'merge' : 'review'} is the one judged`
        : !g
          ? "not judged by the stage's approval policy: the stage approves in kpromo (approvalSource kpromo)"
          : g.counted
            ? undefined
            : (g.why ?? 'not counted by the approval policy');
    return {
      login: r.login,
      user: r.user,
      state: r.state,
      ...(r.merger ? { merger: true } : {}),
      counts: !why,
      ...(why ? { why } : {}),
    };
  });
  return {
    forge: rec.forge,
    repository: rec.repository,
    branch: rec.branch,
    base: rec.base,
    ...(rec.number !== undefined ? { number: rec.number } : {}),
    ...(rec.url ? { url: rec.url } : {}),
    ...(rec.state ? { state: rec.state } : {}),
    ...(rec.merged ? { merged: { ...rec.merged } } : {}),
    ...(rec.message ? { message: rec.message } : {}),
    reviews,
  };
}

/** The waves of a fleet plan in order with their counts; none for a plan into one cluster. */
export function planWaves(plan: PromotionPlan): PlanWave[] {
  const waves = plan.status?.waves ?? [];
  const lanes = new Map((plan.status?.targets ?? []).map((t) => [t.cluster, t]));
  const current = waves.find((w) => !TERMINAL_WAVE_PHASES.has(w.phase))?.name;
  return waves.map(({ succeeded, failed, failureBudget, ...wave }) => {
    const mine = wave.clusters.flatMap((c) => lanes.get(c) ?? []);
    const continuation = plan.spec.continuations?.find((c) => c.wave === wave.name);
    return {
      ...wave,
      clusters: [...wave.clusters],
      succeeded: succeeded ?? mine.filter((l) => l.apps.length && l.apps.every((a) => a.phase === 'Succeeded')).length,
      failed: failed ?? mine.filter((l) => l.apps.some((a) => a.phase === 'Failed')).length,
      budget: failureBudget ?? 0,
      current: wave.name === current,
      ...(continuation && wave.phase === 'Waiting'
        ? {
            pendingContinuation: {
              user: continuation.user,
              ...(continuation.comment ? { comment: continuation.comment } : {}),
            },
          }
        : {}),
    };
  });
}

/** Each candidate's signature verdict: the copy-time one, else the one judged while the plan waited for the same digest. */
export function planSignatures(plan: PromotionPlan): PlanSignature[] {
  const st = plan.status;
  return plan.spec.candidates.flatMap((c) => {
    const s =
      st?.apps?.find((a) => a.application === c.application)?.signature ??
      st?.candidateSignatures?.find((x) => x.application === c.application && x.digest === c.from.digest);
    return s
      ? [{ application: c.application, digest: s.digest, verdict: s.verdict, mode: s.mode, message: s.message }]
      : [];
  });
}

/**
 * Each listed application's place in the order inside the release (status.order): what it starts
 * after and its step, 1 + the highest step of those (1: at once). Empty when the plan records no
 * order. An edge to an app the plan does not list is ignored; a cycle (refused when the plan is
 * created) leaves its members at the step reached.
 */
export function orderSteps(
  names: readonly string[],
  order: readonly { application: string; after: readonly string[] }[],
): Map<string, { step: number; after: string[] }> {
  if (!order.length) return new Map();
  const listed = new Set(names);
  const after = new Map(order.map((o) => [o.application, o.after.filter((d) => listed.has(d))]));
  const steps = new Map<string, number>();
  const stepOf = (n: string, seen: Set<string>): number => {
    const known = steps.get(n);
    if (known !== undefined) return known;
    if (seen.has(n)) return 1;
    seen.add(n);
    const s = 1 + Math.max(0, ...(after.get(n) ?? []).map((d) => stepOf(d, seen)));
    seen.delete(n);
    steps.set(n, s);
    return s;
  };
  return new Map(names.map((n) => [n, { step: stepOf(n, new Set()), after: after.get(n) ?? [] }]));
}

/** The applications the plan lists: its candidates, or (a rollback has none) those in its status. */
const listedApplications = (plan: PromotionPlan): string[] =>
  plan.spec.candidates.length
    ? plan.spec.candidates.map((c) => c.application)
    : (plan.status?.apps ?? []).map((a) => a.application);

/**
 * What the plan changes (PlanProgress.affectedApplications), on its own for callers that need
 * nothing else of the read model (a filter over every plan).
 */
export function affectedApplications(plan: PromotionPlan, rollbackOf?: PromotionPlan): string[] {
  const names = listedApplications(plan);
  if (!isRollback(plan) || names.length) return names;
  return rollbackOf ? rollbackApplications(plan, rollbackOf) : [...(plan.spec.applications ?? [])];
}

/**
 * The plan's read model. `rollbackOf`, the plan a rollback rolls back when the caller has it at
 * hand, tells what a rollback not started yet will restore.
 */
export function planProgress(plan: PromotionPlan, opts: { rollbackOf?: PromotionPlan } = {}): PlanProgress {
  const st = plan.status ?? {};
  const gate = st.gate;
  const byApp = new Map((st.apps ?? []).map((a) => [a.application, a]));
  const names = listedApplications(plan);
  const phase = st.phase ?? 'Pending';
  const rollback = isRollback(plan);
  const waves = planWaves(plan);
  const currentWave = waves.find((w) => w.current)?.name;
  const order = orderSteps(names, st.order ?? []);
  const pullRequest = planPullRequest(plan);
  return {
    namespace: plan.metadata.namespace ?? '',
    name: plan.metadata.name,
    action: rollback ? 'rollback' : 'promote',
    isRollback: rollback,
    from: plan.spec.from,
    to: plan.spec.to,
    ...(plan.spec.requestedBy ? { requestedBy: plan.spec.requestedBy } : {}),
    ...(plan.spec.requestedByAgent ? { requestedByAgent: plan.spec.requestedByAgent } : {}),
    ...(plan.spec.requestedBy && gate?.requestedByPerson ? { requestedByPerson: gate.requestedByPerson } : {}),
    ...(plan.spec.rollbackOf ? { rollbackOf: plan.spec.rollbackOf } : {}),
    affectedApplications: affectedApplications(plan, opts.rollbackOf),
    approved: gate?.approved === true,
    approvers: planApprovers(plan),
    ...(gate?.waitingFor ? { waitingFor: gate.waitingFor } : {}),
    ...(gate?.frozen ? { frozen: { ...gate.frozen } } : {}),
    ...(gate?.eligibleAt ? { eligibleAt: gate.eligibleAt } : {}),
    ...(st.soakResets?.length ? { soakResets: st.soakResets.map((r) => ({ ...r })) } : {}),
    ...(gate?.lineStopped ? { lineStopped: { ...gate.lineStopped } } : {}),
    ...(gate ? { requiredApprovals: gate.required } : {}),
    ...(gate?.orgRules?.length ? { orgRules: gate.orgRules.map((r) => ({ ...r })) } : {}),
    phase,
    done: isTerminalPlan(phase),
    succeeded: st.succeeded ?? 0,
    failed: st.failed ?? 0,
    total: names.length,
    apps: names.map((application) => {
      const a = byApp.get(application);
      const ordered = order.get(application);
      return {
        ...(a ? { ...a } : { application, phase: Waiting }),
        ...(ordered ? { step: ordered.step, ...(ordered.after.length ? { after: [...ordered.after] } : {}) } : {}),
      };
    }),
    signatures: planSignatures(plan),
    waves,
    ...(currentWave ? { currentWave } : {}),
    automaticRollbacks: (st.automaticRollbacks ?? []).map((r) => ({ ...r })),
    ...(pullRequest ? { pullRequest } : {}),
  };
}
