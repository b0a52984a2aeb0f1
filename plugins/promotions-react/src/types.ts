// The wire contract as the frontend uses it: defined once in @kpromo/contract, re-exported by the
// plugin's -common package. Only UI-side helpers live here.
export type {
  AdoptionProposal,
  AppPhase,
  AppProgress,
  ApproveOptions,
  Candidate,
  CandidateImages,
  ContinueOptions,
  CreatePlanRequest,
  CreatePlanResponse,
  DiffResult,
  DiffWithImages,
  DoraGroup,
  DoraKeys,
  DoraReport,
  EnvironmentVersion,
  FlowStageView,
  FlowView,
  HistoryEntry,
  HistoryList,
  ImageInfo,
  ImageSourceLabels,
  LineStopView,
  ListResponse,
  PlanApprover,
  PlanDetails,
  PlanGate,
  PlanProgress,
  PlanSignature,
  PlanWave,
  PromotionPlan,
  TargetProgress,
  WaveContinuation,
  WaveProgress,
} from '@kpromo/plugin-promotions-common';
export {
  isRollback,
  PLAN_PHASE_FILTERS,
  planApprovers,
  planProgress,
  planWaves,
} from '@kpromo/plugin-promotions-common';

import type {
  ApplicationInfo,
  ApplicationsQueryInput,
  DiffQuery as DiffQueryOutput,
  EnvironmentView,
} from '@kpromo/plugin-promotions-common';
import { isTerminalPlan, type PromotionPlan, type SkippedApplication } from '@kpromo/plugin-promotions-common';

/** An Environment as the promotions backend lists it (GET /environments). */
export type EnvironmentSummary = EnvironmentView;
/** An Application with the version running in every Environment (GET /applications). */
export type ApplicationSummary = ApplicationInfo;
export type SkippedApp = SkippedApplication;
export type SkipReason = SkippedApplication['reason'];
export type DiffQuery = Partial<DiffQueryOutput> & { from: string; to: string };
export type ApplicationsQuery = ApplicationsQueryInput;

/** Health values in order of badness (used to pick the worst). */
export const HEALTH_ORDER = ['Healthy', 'Progressing', 'Unknown', 'Missing', 'Degraded'] as const;

/** Whether nothing about the plan changes any more. */
export function isFinalPlan(plan: PromotionPlan | undefined): boolean {
  return isTerminalPlan(plan);
}
