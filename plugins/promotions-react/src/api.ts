import { ResponseError } from '@backstage/errors';
import { createApiRef, type DiscoveryApi, type FetchApi } from '@backstage/frontend-plugin-api';
import { readableMessage } from './format';
import type {
  ApplicationSummary,
  ApproveOptions,
  CreatePlanRequest,
  CreatePlanResponse,
  DiffQuery,
  DiffWithImages,
  DoraReport,
  EnvironmentSummary,
  FlowView,
  HistoryList,
  ListResponse,
  PromotionPlan,
} from './types';

/** Filters of GET /applications (names and teams may be globs). */
export interface ApplicationsFilter {
  namespace?: string;
  teams?: string[];
  applications?: string[];
  /** Equality selector `key=value,key2=value2` over metadata and spec labels. */
  labelSelector?: string;
}

/** Filters of GET /history; since/until take dates, date-times, `7d`, `today`, `monday`… (UTC days). */
export interface HistoryFilter {
  namespace?: string;
  application?: string;
  environment?: string;
  flow?: string;
  team?: string;
  since?: string;
  until?: string;
  limit?: number;
  continue?: string;
}

/** Filters of GET /insights/dora; `window` is a number of days such as `30d`. */
export interface DoraFilter {
  namespace?: string;
  application?: string;
  environment?: string;
  flow?: string;
  team?: string;
  window?: string;
}

/** Filters of GET /plans (server-side); `application` may be a glob, `requestedBy` is part of a name. */
export interface PlansFilter {
  namespace?: string;
  flow?: string;
  /** The environment the plan changes (spec.to). */
  environment?: string;
  /** A plan phase, or `active` for every plan not final yet. */
  phase?: string;
  action?: 'promote' | 'rollback';
  application?: string;
  requestedBy?: string;
}

/** The promotions backend (`/api/promotions`) as the frontend sees it. */
export interface PromotionsApi {
  listEnvironments(opts?: { namespace?: string }): Promise<EnvironmentSummary[]>;
  /** Every application matching the filters (all pages). */
  listApplications(opts?: ApplicationsFilter): Promise<ApplicationSummary[]>;
  /** One page of applications: at most `limit`, `continue` from the previous page's answer. */
  listApplicationsPage?(
    opts: ApplicationsFilter & { limit: number; continue?: string },
  ): Promise<ListResponse<ApplicationSummary>>;
  /** Candidates with their images and OCI source labels (`images`, when the backend has them). */
  getDiff(query: DiffQuery): Promise<DiffWithImages>;
  /** Every plan matching the filters, newest first (all pages). */
  listPlans(opts?: PlansFilter): Promise<PromotionPlan[]>;
  /** One page of plans, newest first: at most `limit`, `continue` from the previous page's answer. */
  listPlansPage(opts: PlansFilter & { limit: number; continue?: string }): Promise<ListResponse<PromotionPlan>>;
  /** PromotionFlows: stages in order, selector and approval settings. */
  listFlows(opts?: { namespace?: string }): Promise<FlowView[]>;
  createPlan(request: CreatePlanRequest): Promise<CreatePlanResponse>;
  getPlan(namespace: string, name: string): Promise<PromotionPlan>;
  /** Adds the signed-in user's approval (optionally overriding a freeze window). */
  approvePlan(namespace: string, name: string, opts?: ApproveOptions): Promise<PromotionPlan>;
  rollbackPlan(namespace: string, name: string, opts?: { approve?: boolean }): Promise<PromotionPlan>;
  /** One page of the release history, newest first (`continue` from the previous page). */
  listHistory(filter?: HistoryFilter): Promise<HistoryList>;
  /** The DORA four keys over a window, in total and per namespace, flow, team and environment. */
  getDora(filter?: DoraFilter): Promise<DoraReport>;
  /** Absolute URL of the MCP proxy (`/api/promotions/mcp`). */
  getMcpUrl(): Promise<string>;
}

export const promotionsApiRef = createApiRef<PromotionsApi>({ id: 'plugin.promotions.service' });

function query(params: Record<string, string | string[] | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) {
      if (v.length) q.set(k, v.join(','));
    } else if (v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

function list<T>(body: unknown): ListResponse<T> {
  if (Array.isArray(body)) return { items: body as T[] };
  if (body && typeof body === 'object' && Array.isArray((body as { items?: unknown }).items))
    return body as ListResponse<T>;
  throw new Error('unexpected response from the promotions backend: expected a list');
}

const items = <T>(body: unknown): T[] => list<T>(body).items;

/** The HTTP status of a failed promotions call, if it got an answer. */
export function errorStatus(error: unknown): number | undefined {
  return (error as { response?: { status?: number } } | undefined)?.response?.status;
}

/**
 * Whether the error says the thing asked for does not exist (a plan, an environment): a 404 naming
 * it, as opposed to a 404 because the promotions backend itself is not installed.
 */
export function isNotFound(error: unknown): boolean {
  if (errorStatus(error) !== 404) return false;
  const message = (error as { body?: { error?: { message?: string } } }).body?.error?.message ?? '';
  // The controller names what is missing ("PromotionPlan shop/x not found", "Environment "x" not found
  // in namespace shop"); a route nobody serves answers a bare "Not Found".
  return /^(PromotionPlan|PromotionFlow|Environment|Application)\b.*\bnot found|not found in namespace/i.test(message);
}

const plansQuery = (f: PlansFilter) => ({
  namespace: f.namespace,
  flow: f.flow,
  environment: f.environment,
  phase: f.phase,
  action: f.action,
  application: f.application,
  requestedBy: f.requestedBy,
});

/**
 * One page of a list held whole, as the server would page it, with the offset as `continue` (for
 * an API object without server paging, and for tests).
 */
export function offsetPage<T>(
  all: readonly T[],
  q: { limit: number; continue?: string },
): ListResponse<T> & { total: number } {
  const from = Math.max(0, Number(q.continue ?? 0) || 0);
  return {
    items: all.slice(from, from + q.limit),
    total: all.length,
    ...(from + q.limit < all.length ? { continue: String(from + q.limit) } : {}),
  };
}

/** Pages of GET /applications asked for at once when listing all of them. */
const PAGE = 500;

/** The backend answers plan routes with `{plan, progress}`; the controller API with the bare plan. */
type PlanBody = PromotionPlan | { plan: PromotionPlan };
function unwrapPlan(body: PlanBody): PromotionPlan {
  return 'plan' in body && body.plan ? body.plan : (body as PromotionPlan);
}

/** Calls the promotions backend with the signed-in user's Backstage token (fetchApi). */
export class PromotionsClient implements PromotionsApi {
  private readonly discoveryApi: DiscoveryApi;
  private readonly fetchApi: FetchApi;

  constructor(options: { discoveryApi: DiscoveryApi; fetchApi: FetchApi }) {
    this.discoveryApi = options.discoveryApi;
    this.fetchApi = options.fetchApi;
  }

  private async call<T>(path: string, init?: { method: 'POST'; body: unknown }): Promise<T> {
    const base = await this.discoveryApi.getBaseUrl('promotions');
    const res = await this.fetchApi.fetch(`${base}${path}`, {
      method: init?.method ?? 'GET',
      headers: init ? { 'Content-Type': 'application/json' } : undefined,
      body: init ? JSON.stringify(init.body) : undefined,
    });
    if (!res.ok) {
      const err = await ResponseError.fromResponse(res as unknown as Parameters<typeof ResponseError.fromResponse>[0]);
      // Show the backend's reason (e.g. "user:… is not allowed to promotion.plan.approve for …"), not just
      // "Request failed with 403".
      // Digests are shortened: a 64-character hex string helps nobody reading an error.
      const detail = (err.body as { error?: { message?: string } } | undefined)?.error?.message;
      err.message = detail ? `${readableMessage(detail)} (HTTP ${res.status})` : readableMessage(err.message);
      throw err;
    }
    return (await res.json()) as T;
  }

  async listEnvironments(opts: { namespace?: string } = {}) {
    return items<EnvironmentSummary>(await this.call(`/environments${query({ namespace: opts.namespace })}`));
  }

  async listApplicationsPage(opts: ApplicationsFilter & { limit: number; continue?: string }) {
    return list<ApplicationSummary>(
      await this.call(
        `/applications${query({
          namespace: opts.namespace,
          teams: opts.teams,
          applications: opts.applications,
          labelSelector: opts.labelSelector,
          limit: String(opts.limit),
          continue: opts.continue,
        })}`,
      ),
    );
  }

  async listApplications(opts: ApplicationsFilter = {}) {
    const out: ApplicationSummary[] = [];
    let next: string | undefined;
    do {
      const page = await this.listApplicationsPage({ ...opts, limit: PAGE, continue: next });
      out.push(...page.items);
      next = page.continue;
    } while (next);
    return out;
  }

  getDiff(q: DiffQuery) {
    return this.call<DiffWithImages>(
      `/diff${query({ namespace: q.namespace, flow: q.flow, from: q.from, to: q.to, applications: q.applications, teams: q.teams, tagPattern: q.tagPattern })}`,
    );
  }

  async listPlansPage(opts: PlansFilter & { limit: number; continue?: string }) {
    return list<PromotionPlan>(
      await this.call(`/plans${query({ ...plansQuery(opts), limit: String(opts.limit), continue: opts.continue })}`),
    );
  }

  async listPlans(opts: PlansFilter = {}) {
    return items<PromotionPlan>(await this.call(`/plans${query(plansQuery(opts))}`));
  }

  async listFlows(opts: { namespace?: string } = {}) {
    return items<FlowView>(await this.call(`/flows${query({ namespace: opts.namespace })}`));
  }

  async createPlan(request: CreatePlanRequest) {
    const body = await this.call<CreatePlanResponse | PromotionPlan>('/plans', { method: 'POST', body: request });
    return 'plan' in body ? body : { plan: body, skipped: [] };
  }

  async getPlan(namespace: string, name: string) {
    return unwrapPlan(await this.call<PlanBody>(`/plans/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`));
  }

  async approvePlan(namespace: string, name: string, opts: ApproveOptions = {}) {
    return unwrapPlan(
      await this.call<PlanBody>(`/plans/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/approve`, {
        method: 'POST',
        body: {
          ...(opts.overrideFreeze ? { overrideFreeze: true } : {}),
          ...(opts.comment ? { comment: opts.comment } : {}),
          ...(opts.uid ? { uid: opts.uid } : {}),
        },
      }),
    );
  }

  async rollbackPlan(namespace: string, name: string, opts: { approve?: boolean } = {}) {
    return unwrapPlan(
      await this.call<PlanBody>(`/plans/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/rollback`, {
        method: 'POST',
        body: opts,
      }),
    );
  }

  listHistory(f: HistoryFilter = {}) {
    return this.call<HistoryList>(
      `/history${query({ ...f, limit: f.limit === undefined ? undefined : String(f.limit) })}`,
    );
  }

  getDora(f: DoraFilter = {}) {
    return this.call<DoraReport>(`/insights/dora${query({ ...f })}`);
  }

  async getMcpUrl() {
    return `${await this.discoveryApi.getBaseUrl('promotions')}/mcp`;
  }
}
