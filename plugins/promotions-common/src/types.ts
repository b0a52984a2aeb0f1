import type { AppProgress, Candidate, EnvironmentVersion, PromotionPlan } from '@kpromo/api';

export type { AppProgress, Candidate, EnvironmentVersion, PromotionPlan } from '@kpromo/api';

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

/** Per-application progress of a plan, as shown by GET /plans/:namespace/:name. */
export interface PlanProgress {
  namespace: string;
  name: string;
  action: 'promote' | 'rollback';
  from: string;
  to: string;
  approved: boolean;
  approvedBy?: string;
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

/** Header carrying the Backstage caller (user or service entity ref) to the controller. */
export const KPROMO_USER_HEADER = 'x-kpromo-user';

export function planProgress(plan: PromotionPlan): PlanProgress {
  const st = plan.status ?? {};
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
    approved: plan.spec.approved === true,
    ...(plan.spec.approvedBy ? { approvedBy: plan.spec.approvedBy } : {}),
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
