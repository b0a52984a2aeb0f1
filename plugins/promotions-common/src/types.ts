import type { AppProgress, Approval, Candidate, EnvironmentVersion, PlanGate, PromotionPlan } from '@kpromo/api';

export type { AppProgress, Approval, Candidate, EnvironmentVersion, PlanGate, PromotionPlan } from '@kpromo/api';

/** GET /environments item (the controller's EnvironmentView). */
export interface EnvironmentInfo {
  namespace: string;
  name: string;
  tier?: string;
  cluster: { context?: string; [k: string]: unknown };
  targetNamespace: string;
  registry: string;
  delivery: string;
  synced: boolean;
}

/** GET /applications item: the version and health running in every Environment. */
export interface ApplicationInfo {
  namespace: string;
  name: string;
  owner: string;
  repository: string;
  labels: Record<string, string>;
  versions: EnvironmentVersion[];
  /** Catalog entity the app's permissions are checked against (promotions.entityRef template). */
  entityRef: string;
}

export interface SkippedApplication {
  application: string;
  reason: string;
  message: string;
}

/** GET /diff */
export interface DiffResult {
  flow: string;
  from: string;
  to: string;
  candidates: Candidate[];
  skipped: SkippedApplication[];
}

export interface ListResponse<T> {
  items: T[];
}

/** POST /plans */
export interface CreatePlanResponse {
  plan: PromotionPlan;
  skipped: SkippedApplication[];
}

/**
 * One approval of a plan: the user from spec.approvals (what they asked for) with what the
 * controller observed in status.gate (when it saw the approval, whether it counts for the policy).
 */
export type PlanApprover = Pick<Approval, 'user' | 'groups' | 'overrideFreeze' | 'comment'> &
  Partial<Pick<NonNullable<PlanGate['approvers']>[number], 'observedAt' | 'counted'>>;

/** Per-application progress of a plan, and what its gate says, as shown by GET /plans/:namespace/:name. */
export interface PlanProgress {
  namespace: string;
  name: string;
  action: 'promote' | 'rollback';
  from: string;
  to: string;
  /** Who created the plan (spec.requestedBy). */
  requestedBy?: string;
  /** The approval policy of the target stage is met (status.gate.approved). */
  approved: boolean;
  /** Every approval, in the order given (spec.approvals), with observedAt/counted from status.gate. */
  approvers: PlanApprover[];
  /** Who still must approve, in words (status.gate.waitingFor). */
  waitingFor?: string;
  /** The freeze window holding the plan (status.gate.frozen). */
  frozen?: PlanGate['frozen'];
  /** When every candidate has soaked long enough in the source (status.gate.eligibleAt). */
  eligibleAt?: string;
  phase: NonNullable<NonNullable<PromotionPlan['status']>['phase']>;
  done: boolean;
  succeeded: number;
  failed: number;
  total: number;
  apps: Array<
    Omit<Partial<AppProgress>, 'application' | 'phase'> & {
      application: string;
      phase: AppProgress['phase'] | 'Waiting';
    }
  >;
}

export interface PlanDetails {
  plan: PromotionPlan;
  progress: PlanProgress;
}

/** Phases after which a plan does not change any more. */
export const TERMINAL_PHASES = ['Complete', 'Incomplete', 'Failed', 'RolledBack'] as const;

/**
 * Header naming the identity the Backstage backend acts for at the controller (user entity ref,
 * `service:<subject>` or `port:<email>`). The controller honours it only when Kubernetes RBAC lets
 * the backend's own token user `impersonate` that user, like `kubectl --as`.
 */
export const KPROMO_USER_HEADER = 'x-kpromo-user';

/** Comma-separated groups of that identity (the user's ownership entity refs), like `kubectl --as-group`. */
export const KPROMO_GROUPS_HEADER = 'x-kpromo-groups';

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
      ...(g ? { counted: g.counted } : {}),
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
    approved: gate?.approved === true,
    approvers: planApprovers(plan),
    ...(gate?.waitingFor ? { waitingFor: gate.waitingFor } : {}),
    ...(gate?.frozen ? { frozen: { ...gate.frozen } } : {}),
    ...(gate?.eligibleAt ? { eligibleAt: gate.eligibleAt } : {}),
    phase,
    done: (TERMINAL_PHASES as readonly string[]).includes(phase),
    succeeded: st.succeeded ?? 0,
    failed: st.failed ?? 0,
    total: names.length,
    apps: names.map((application) => {
      const a = byApp.get(application);
      return a ? { ...a } : { application, phase: 'Waiting' as const };
    }),
  };
}
