import {
  APP_PHASES,
  AppProgress as AppProgressSchema,
  Approval,
  isTerminalPlan,
  PLAN_PHASES,
  PlanGate,
  type PromotionPlan,
  StringEnum,
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
    Type.Pick(Approval, ['user', 'groups', 'overrideFreeze', 'comment']),
    Type.Partial(Type.Pick(PlanGateApprover, ['observedAt', 'person', 'counted', 'why'])),
  ],
  { $id: 'PlanApprover' },
);

/** Per-application progress of a plan and what its gate says: one view for the portal, CLI and MCP. */
export const PlanProgress = Type.Object(
  {
    namespace: Type.String(),
    name: Type.String(),
    action: StringEnum(['promote', 'rollback'] as const),
    from: Type.String(),
    to: Type.String(),
    requestedBy: Type.Optional(Type.String({ description: 'Who created the plan (spec.requestedBy).' })),
    requestedByPerson: Type.Optional(
      Type.String({
        description: 'The person the controller judged spec.requestedBy as (status.gate.requestedByPerson).',
      }),
    ),
    rollbackOf: Type.Optional(Type.String({ description: 'The plan this one rolls back (spec.rollbackOf).' })),
    approved: Type.Boolean({ description: 'The approval policy of the target stage is met (status.gate.approved).' }),
    approvers: Type.Array(PlanApprover, { description: 'spec.approvals in order, with what status.gate observed.' }),
    waitingFor: Type.Optional(Type.String({ description: 'Who still must approve, in words.' })),
    frozen: Type.Optional(PlanGate.properties.frozen),
    eligibleAt: Type.Optional(Type.String({ description: 'When every candidate has soaked long enough.' })),
    phase: StringEnum(PLAN_PHASES),
    done: Type.Boolean({ description: 'The phase is final: nothing about the plan changes any more.' }),
    succeeded: Type.Integer({ minimum: 0 }),
    failed: Type.Integer({ minimum: 0 }),
    total: Type.Integer({ minimum: 0 }),
    apps: Type.Array(
      Type.Composite([
        Type.Partial(Type.Omit(AppProgressSchema, ['application', 'phase'])),
        Type.Object({ application: Type.String(), phase: StringEnum([...APP_PHASES, Waiting]) }),
      ]),
    ),
  },
  { $id: 'PlanProgress' },
);

export const PlanDetails = Type.Object({ plan: PromotionPlanObject, progress: PlanProgress }, { $id: 'PlanDetails' });

export type PlanApprover = Static<typeof PlanApprover>;
export type PlanProgress = Static<typeof PlanProgress>;
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
      ...(a.comment ? { comment: a.comment } : {}),
      ...(g?.observedAt ? { observedAt: g.observedAt } : {}),
      ...(g?.person ? { person: g.person } : {}),
      ...(g ? { counted: g.counted } : {}),
      ...(g?.why ? { why: g.why } : {}),
    };
  });
}

export function planProgress(plan: PromotionPlan): PlanProgress {
  const st = plan.status ?? {};
  const gate = st.gate;
  const byApp = new Map((st.apps ?? []).map((a) => [a.application, a]));
  const names = plan.spec.candidates.length
    ? plan.spec.candidates.map((c) => c.application)
    : (st.apps ?? []).map((a) => a.application);
  const phase = st.phase ?? 'Pending';
  return {
    namespace: plan.metadata.namespace ?? '',
    name: plan.metadata.name,
    action: plan.spec.action ?? 'promote',
    from: plan.spec.from,
    to: plan.spec.to,
    ...(plan.spec.requestedBy ? { requestedBy: plan.spec.requestedBy } : {}),
    ...(plan.spec.requestedBy && gate?.requestedByPerson ? { requestedByPerson: gate.requestedByPerson } : {}),
    ...(plan.spec.rollbackOf ? { rollbackOf: plan.spec.rollbackOf } : {}),
    approved: gate?.approved === true,
    approvers: planApprovers(plan),
    ...(gate?.waitingFor ? { waitingFor: gate.waitingFor } : {}),
    ...(gate?.frozen ? { frozen: { ...gate.frozen } } : {}),
    ...(gate?.eligibleAt ? { eligibleAt: gate.eligibleAt } : {}),
    phase,
    done: isTerminalPlan(phase),
    succeeded: st.succeeded ?? 0,
    failed: st.failed ?? 0,
    total: names.length,
    apps: names.map((application) => {
      const a = byApp.get(application);
      return a ? { ...a } : { application, phase: Waiting };
    }),
  };
}
