/**
 * The wire contract between the kpromo controller, this backend plugin and its frontend, as the
 * Backstage plugins import it. It is defined once, in @kpromo/contract (request schemas, response
 * schemas, plan progress); this module only re-exports it under the names the plugins use.
 */
export type {
  AppPhase,
  AppProgress,
  Approval,
  Candidate,
  EnvironmentVersion,
  PlanGate,
  PromotionPlan,
} from '@kpromo/api';
export { isTerminalPlan, TERMINAL_PLAN_PHASES } from '@kpromo/api';
/** GET /environments item. */
export type { EnvironmentView as EnvironmentInfo } from '@kpromo/contract';
export {
  type ApplicationInfo,
  ApplicationsQuery,
  type ApplicationsQueryInput,
  type ApplicationView,
  ApproveBody,
  type ApproveOptions,
  BACKEND_API,
  CreatePlanBody,
  type CreatePlanRequest,
  type CreatePlanResponse,
  checkInput,
  DiffQuery,
  type DiffResult,
  type EnvironmentView,
  type InputWhere,
  KPROMO_GROUPS_HEADER,
  KPROMO_USER_HEADER,
  type ListResponse,
  NamespaceQuery,
  type PlanApprover,
  type PlanDetails,
  PlanParams,
  type PlanProgress,
  planApprovers,
  planProgress,
  RollbackBody,
  type SkippedApplication,
  tagPatternProblem,
} from '@kpromo/contract';
