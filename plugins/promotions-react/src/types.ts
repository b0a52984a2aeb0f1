import type { Candidate, EnvironmentVersion, PromotionPlan } from '@kpromo/api';

export type { AppPhase, AppProgress, Candidate, EnvironmentVersion, PlanGate, PromotionPlan } from '@kpromo/api';
// The plan's progress and gate (approvals, freeze, soak) as one view, shared with the backend.
export {
  type PlanApprover,
  type PlanProgress,
  planApprovers,
  planProgress,
} from '@kpromo/plugin-promotions-common';

/** An Environment as the promotions backend lists it (GET /environments). */
export interface EnvironmentSummary {
  namespace: string;
  name: string;
  tier?: string;
  cluster?: unknown;
  targetNamespace?: string;
  registry?: string;
  delivery?: string;
  synced?: boolean;
}

/** An Application with the version running in every Environment (GET /applications). */
export interface ApplicationSummary {
  namespace: string;
  name: string;
  owner: string;
  repository?: string;
  labels?: Record<string, string>;
  versions: EnvironmentVersion[];
  /** Catalog entity the backend checks app-scoped permissions against. */
  entityRef?: string;
}

export type SkipReason =
  | 'NotSelected'
  | 'NoSourceVersion'
  | 'SourceNotHealthy'
  | 'TagPatternMismatch'
  | 'UpToDate'
  | 'NoDigest'
  | string;

export interface SkippedApp {
  application: string;
  reason: SkipReason;
  message: string;
}

/** Release candidates between two adjacent stages (GET /diff). */
export interface DiffResult {
  flow?: string;
  from: string;
  to: string;
  candidates: Candidate[];
  skipped: SkippedApp[];
}

export interface DiffQuery {
  namespace?: string;
  flow?: string;
  from: string;
  to: string;
  applications?: string[];
  teams?: string[];
  tagPattern?: string;
}

/** Options of an approval; the approver is always the signed-in user. */
export interface ApproveOptions {
  /** Emergency: run despite a freeze window (needs the override-freeze verb at the controller). */
  overrideFreeze?: boolean;
  /** Recorded with the approval, e.g. why a freeze is overridden. */
  comment?: string;
}

export interface CreatePlanRequest extends DiffQuery {
  name?: string;
  approve?: boolean;
}

export interface CreatePlanResponse {
  plan: PromotionPlan;
  skipped: SkippedApp[];
}

/** Health values in order of badness (used to pick the worst). */
export const HEALTH_ORDER = ['Healthy', 'Progressing', 'Unknown', 'Missing', 'Degraded'] as const;

/** Plan phases after which nothing changes any more. */
export const FINAL_PLAN_PHASES = ['Complete', 'Incomplete', 'Failed', 'RolledBack'] as const;

export function isFinalPlan(plan: PromotionPlan | undefined): boolean {
  const p = plan?.status?.phase;
  return !!p && (FINAL_PLAN_PHASES as readonly string[]).includes(p);
}
