import type { TSchema } from '@sinclair/typebox';
import type { z } from 'zod';
import {
  AdoptBody,
  AlertmanagerWebhookBody,
  ApplicationsQuery,
  ApproveBody,
  ContinueBody,
  CreatePlanBody,
  DiffQuery,
  DoraQuery,
  HistoryQuery,
  LineStopParams,
  NamespaceQuery,
  PlanParams,
  PlansQuery,
  ResourceActionBody,
  RollbackBody,
  StopLineBody,
} from './inputs.js';
import { PlanDetails } from './planProgress.js';
import {
  AdoptionProposal,
  AlertReceipt,
  ApplicationInfoList,
  ApplicationList,
  BackstageErrorBody,
  CreatePlanResponse,
  DiffWithImages,
  DoraReport,
  EnvironmentList,
  ErrorBody,
  FlowList,
  HistoryList,
  LiftResult,
  LineStopList,
  LineStopView,
  PlanList,
  PromotionPlanObject,
  ResourceActionResult,
} from './views.js';

/** One route of an HTTP API: what it takes (zod, parsed by the server) and answers (TypeBox). */
export interface Route {
  method: 'get' | 'post';
  /** OpenAPI path template, e.g. /plans/{namespace}/{name}. */
  path: string;
  operationId: string;
  summary: string;
  params?: z.ZodObject;
  query?: z.ZodType;
  body?: z.ZodType;
  status: 200 | 201;
  response: TSchema;
}

const plan = '/plans/{namespace}/{name}';

/** The controller's JSON API under /api/v1 (also what the CLI and MCP tools call in-process). */
export const CONTROLLER_ROUTES: readonly Route[] = [
  {
    method: 'get',
    path: '/applications',
    operationId: 'listApplications',
    summary:
      'Applications the caller may list, with the version running in every Environment; paged with limit/continue.',
    query: ApplicationsQuery,
    status: 200,
    response: ApplicationList,
  },
  {
    method: 'get',
    path: '/environments',
    operationId: 'listEnvironments',
    summary: 'Environments the caller may list.',
    query: NamespaceQuery,
    status: 200,
    response: EnvironmentList,
  },
  {
    method: 'get',
    path: '/diff',
    operationId: 'diff',
    summary:
      "Release candidates between two adjacent stages of a flow, and why the others are skipped; with each candidate's images and their OCI source labels (read lazily, within a short time budget).",
    query: DiffQuery,
    status: 200,
    response: DiffWithImages,
  },
  {
    method: 'get',
    path: '/flows',
    operationId: 'listFlows',
    summary:
      'PromotionFlows the caller may list: stages in order with their approval settings, and which applications they move.',
    query: NamespaceQuery,
    status: 200,
    response: FlowList,
  },
  {
    method: 'get',
    path: '/plans',
    operationId: 'listPlans',
    summary:
      'PromotionPlans the caller may list, newest first; filtered by flow, environment, phase, action, application and requester, paged with limit/continue.',
    query: PlansQuery,
    status: 200,
    response: PlanList,
  },
  {
    method: 'post',
    path: '/plans',
    operationId: 'createPlan',
    summary: 'Computes candidates and creates a PromotionPlan as the caller (optionally approved by the caller).',
    body: CreatePlanBody,
    status: 201,
    response: CreatePlanResponse,
  },
  {
    method: 'get',
    path: plan,
    operationId: 'getPlan',
    summary: 'A PromotionPlan with its live status.',
    params: PlanParams,
    status: 200,
    response: PromotionPlanObject,
  },
  {
    method: 'post',
    path: `${plan}/approve`,
    operationId: 'approvePlan',
    summary: "Adds the caller's approval (RBAC verb approve, rollback for a rollback plan, override-freeze).",
    params: PlanParams,
    body: ApproveBody,
    status: 200,
    response: PromotionPlanObject,
  },
  {
    method: 'post',
    path: `${plan}/continue`,
    operationId: 'continuePlan',
    summary:
      "Lets the next wave of a fleet plan start after a wave with pause: appends the caller's continuation (RBAC verb continue for the target environment); wave defaults to the one that is Waiting.",
    params: PlanParams,
    body: ContinueBody,
    status: 200,
    response: PromotionPlanObject,
  },
  {
    method: 'post',
    path: `${plan}/rollback`,
    operationId: 'rollbackPlan',
    summary: 'Creates a rollback plan restoring the versions the plan replaced.',
    params: PlanParams,
    body: RollbackBody,
    status: 201,
    response: PromotionPlanObject,
  },
  {
    method: 'get',
    path: '/history',
    operationId: 'listHistory',
    summary:
      'Promotions and rollbacks per application and environment (who, when, from→to, digest, duration, result), newest first, in namespaces where the caller may list PromotionPlans; paged with limit/continue.',
    query: HistoryQuery,
    status: 200,
    response: HistoryList,
  },
  {
    method: 'get',
    path: '/insights/dora',
    operationId: 'doraInsights',
    summary:
      'The DORA four keys (deployment frequency, lead time for changes, change failure rate, time to restore) over a window, in total and per namespace, flow, team and environment, from the history the caller may read.',
    query: DoraQuery,
    status: 200,
    response: DoraReport,
  },
  {
    method: 'post',
    path: '/resources',
    operationId: 'applyResource',
    summary:
      'Creates, updates (merges spec) or deletes one custom resource of a kind the controller opens to this route (resourceKinds), as the caller: RBAC create, patch or delete on that resource in that namespace.',
    body: ResourceActionBody,
    status: 200,
    response: ResourceActionResult,
  },
  {
    method: 'post',
    path: '/adopt',
    operationId: 'proposeAdoption',
    summary:
      "Reads what runs in a flow's Environments and proposes Applications for it (YAML to review and apply by pull request or kubectl; nothing is written). Needs RBAC create on applications in the namespace.",
    body: AdoptBody,
    status: 200,
    response: AdoptionProposal,
  },
  {
    method: 'get',
    path: '/linestops',
    operationId: 'listLineStops',
    summary:
      'LineStops (the line is stopped: no plan starts, running plans start no further app) in namespaces where the caller may list them.',
    query: NamespaceQuery,
    status: 200,
    response: LineStopList,
  },
  {
    method: 'post',
    path: '/linestops',
    operationId: 'stopLine',
    summary:
      "Stops the line as the caller (RBAC create on linestops), recording the caller as stoppedBy. scope AllNamespaces stops every namespace when made in the controller's lineStopNamespace.",
    body: StopLineBody,
    status: 201,
    response: LineStopView,
  },
  {
    method: 'post',
    path: '/linestops/{namespace}/{name}/lift',
    operationId: 'liftLineStop',
    summary: 'Lifts a LineStop as the caller (RBAC delete on linestops): held plans go on.',
    params: LineStopParams,
    status: 200,
    response: LiftResult,
  },
  {
    method: 'post',
    path: '/alertmanager',
    operationId: 'receiveAlerts',
    summary:
      'Alertmanager webhook receiver: firing alerts labelled kpromo_stop_line="true" stop the line (in kpromo_namespace, or every namespace from lineStopNamespace), resolved ones lift it when lineStopAlerts.liftOnResolve is set; authorised as the caller (Alertmanager\'s bearer token) like every other door: recording an alert as a stop\'s cause needs the kpromo verb alert on linestops in the namespace it stops (every namespace: cluster-wide).',
    body: AlertmanagerWebhookBody,
    status: 200,
    response: AlertReceipt,
  },
];

/**
 * The Backstage backend plugin's API under /api/promotions: the controller's routes with the
 * catalog entity of every application and each plan's progress added.
 */
export const BACKEND_ROUTES: readonly Route[] = CONTROLLER_ROUTES.filter(
  // Resource actions reach the controller only through the backend's signed Port webhook, and
  // Alertmanager calls the controller itself.
  (r) => r.operationId !== 'applyResource' && r.path !== '/alertmanager',
).map((r) => {
  if (r.operationId === 'listApplications') return { ...r, response: ApplicationInfoList };
  if (r.path.startsWith(plan)) return { ...r, response: PlanDetails };
  return r;
});

export interface ApiDescription {
  title: string;
  description: string;
  basePath: string;
  routes: readonly Route[];
  error: TSchema;
}

export const CONTROLLER_API: ApiDescription = {
  title: 'kpromo controller API',
  description:
    'The JSON API of the kpromo controller. Every route needs a bearer token (static token or a Kubernetes ' +
    'ServiceAccount token with audience kpromo); each call is authorised as the caller with Kubernetes RBAC ' +
    '(SubjectAccessReview); writes are made by the controller once RBAC allowed the caller, recording the caller.',
  basePath: '/api/v1',
  routes: CONTROLLER_ROUTES,
  error: ErrorBody,
};

export const BACKEND_API: ApiDescription = {
  title: 'kpromo Backstage backend API',
  description:
    'The promotions backend plugin (pluginId promotions). Callers authenticate with Backstage; the backend checks ' +
    'Backstage permissions, then calls the controller for the signed-in user (x-kpromo-user impersonation).',
  basePath: '/api/promotions',
  routes: BACKEND_ROUTES,
  error: BackstageErrorBody,
};
