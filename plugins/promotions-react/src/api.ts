import { ResponseError } from '@backstage/errors';
import { createApiRef, type DiscoveryApi, type FetchApi } from '@backstage/frontend-plugin-api';
import { answer, type BackendApi, type BackendPaths, backendApi } from '@kpromo/plugin-promotions-common';
import { readableMessage } from './format';
import type {
  AdoptionProposal,
  ApplicationSummary,
  ApproveOptions,
  ContinueOptions,
  CreatePlanRequest,
  CreatePlanResponse,
  DiffQuery,
  DiffWithImages,
  DoraReport,
  EnvironmentSummary,
  FlowView,
  HistoryList,
  LineStopView,
  ListResponse,
  PlanDetails,
  PromotionPlan,
} from './types';

/** The query parameters of a GET route of the backend, as the OpenAPI document (the contract) has them. */
type QueryOf<P extends keyof BackendPaths> = BackendPaths[P] extends { get: { parameters: { query?: infer Q } } }
  ? NonNullable<Q>
  : never;
type Paging = 'limit' | 'continue';

/** Filters of GET /applications (names and teams may be globs; lists here, comma-separated on the wire). */
export type ApplicationsFilter = Omit<QueryOf<'/applications'>, Paging | 'teams' | 'applications'> & {
  teams?: string[];
  applications?: string[];
};

/** Filters of GET /history; since/until take dates, date-times, `7d`, `today`, `monday`… (UTC days). */
export type HistoryFilter = QueryOf<'/history'>;

/** Filters of GET /insights/dora; `window` is a number of days such as `30d`. */
export type DoraFilter = QueryOf<'/insights/dora'>;

/** Filters of GET /plans (server-side); `application` may be a glob, `requestedBy` is part of a name. */
export type PlansFilter = Omit<QueryOf<'/plans'>, Paging>;

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
  /**
   * A plan with its progress, the read model the backend projects (@kpromo/contract's PlanProgress):
   * the portal renders that rather than projecting status itself. So do the plan's actions below.
   */
  getPlan(namespace: string, name: string): Promise<PlanDetails>;
  /** Adds the signed-in user's approval (optionally overriding a freeze window). */
  approvePlan(namespace: string, name: string, opts: ApproveOptions): Promise<PlanDetails>;
  /**
   * Lets the next wave of a fleet plan start after a pause, as the signed-in user: `wave` (default:
   * the one Waiting) and the `uid` of the plan the user was shown.
   */
  continuePlan(namespace: string, name: string, opts?: ContinueOptions): Promise<PlanDetails>;
  /**
   * Creates a rollback of a plan (approved with `approve`), bound to the plan the user was shown:
   * `uid` is required with approve. The rollback's name is generated: read it from the plan returned.
   */
  rollbackPlan(namespace: string, name: string, opts?: { approve?: boolean; uid?: string }): Promise<PlanDetails>;
  /** One page of the release history, newest first (`continue` from the previous page). */
  listHistory(filter?: HistoryFilter): Promise<HistoryList>;
  /** The DORA four keys over a window, in total and per namespace, flow, team and environment. */
  getDora(filter?: DoraFilter): Promise<DoraReport>;
  /** Absolute URL of the MCP proxy (`/api/promotions/mcp`). */
  getMcpUrl(): Promise<string>;
  /** Where the line is stopped (LineStops) in namespaces the user may list them. */
  listLineStops?(opts?: { namespace?: string }): Promise<LineStopView[]>;
  /** Stops the line as the signed-in user. */
  stopLine?(request: { namespace?: string; reason: string; environments?: string[] }): Promise<LineStopView>;
  /** Lifts one stop as the signed-in user. */
  liftLineStop?(namespace: string, name: string): Promise<{ lifted: string }>;
  /** Applications proposed for what runs in a flow's Environments (nothing is written). */
  proposeAdoption?(request: AdoptionRequest): Promise<AdoptionProposal>;
}

/** What POST /adopt takes: the flow adopted into, the owning team, and the applications chosen. */
export interface AdoptionRequest {
  namespace?: string;
  flow?: string;
  owner?: string;
  applications?: string[];
}

export const promotionsApiRef = createApiRef<PromotionsApi>({ id: 'plugin.promotions.service' });

/** A list as the backend's query takes it: comma-separated, absent when empty. */
const csv = (v?: readonly string[]) => (v?.length ? v.join(',') : undefined);

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

/** Calls the promotions backend with the signed-in user's Backstage token (fetchApi). */
export class PromotionsClient implements PromotionsApi {
  private readonly discoveryApi: DiscoveryApi;
  private readonly fetchApi: FetchApi;

  constructor(options: { discoveryApi: DiscoveryApi; fetchApi: FetchApi }) {
    this.discoveryApi = options.discoveryApi;
    this.fetchApi = options.fetchApi;
  }

  /**
   * The backend API through the typed client derived from the contract, with the signed-in user's
   * Backstage token (fetchApi). A refusal becomes a ResponseError (status and body kept, for
   * errorStatus/isNotFound) whose message is the backend's reason (e.g. "user:… is not allowed to
   * promotion.plan.approve for …"), not just "Request failed with 403"; digests are shortened.
   */
  private async api(): Promise<BackendApi> {
    const api = backendApi({
      baseUrl: await this.discoveryApi.getBaseUrl('promotions'),
      // Handed on as URL + init with a text body, as fetchApi implementations (identity and proxy
      // middleware that rebuild the request) are written for; a streamed Request body does not survive them.
      fetch: async (request) =>
        this.fetchApi.fetch(request.url, {
          method: request.method,
          headers: request.headers,
          body: request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.text(),
          signal: request.signal,
        }),
    });
    api.use({
      async onResponse({ response }) {
        if (response.ok) return undefined;
        const err = await ResponseError.fromResponse(
          response as unknown as Parameters<typeof ResponseError.fromResponse>[0],
        );
        const detail = (err.body as { error?: { message?: string } } | undefined)?.error?.message;
        err.message = detail ? `${readableMessage(detail)} (HTTP ${response.status})` : readableMessage(err.message);
        throw err;
      },
    });
    return api;
  }

  async listEnvironments(opts: { namespace?: string } = {}) {
    const api = await this.api();
    return items<EnvironmentSummary>(
      await answer(api.GET('/environments', { params: { query: { namespace: opts.namespace } } })),
    );
  }

  async listApplicationsPage(opts: ApplicationsFilter & { limit: number; continue?: string }) {
    const api = await this.api();
    const { teams, applications, ...rest } = opts;
    return list<ApplicationSummary>(
      await answer(
        api.GET('/applications', {
          params: { query: { ...rest, teams: csv(teams), applications: csv(applications) } },
        }),
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

  async getDiff(q: DiffQuery): Promise<DiffWithImages> {
    const api = await this.api();
    const { namespace, flow, from, to, tagPattern } = q;
    const query = { namespace, flow, from, to, tagPattern, applications: csv(q.applications), teams: csv(q.teams) };
    return answer(api.GET('/diff', { params: { query } }));
  }

  async listPlansPage(opts: PlansFilter & { limit: number; continue?: string }) {
    const api = await this.api();
    return list<PromotionPlan>(await answer(api.GET('/plans', { params: { query: opts } })));
  }

  async listPlans(opts: PlansFilter = {}) {
    const api = await this.api();
    return items<PromotionPlan>(await answer(api.GET('/plans', { params: { query: opts } })));
  }

  async listFlows(opts: { namespace?: string } = {}) {
    const api = await this.api();
    return items<FlowView>(await answer(api.GET('/flows', { params: { query: { namespace: opts.namespace } } })));
  }

  async createPlan(request: CreatePlanRequest): Promise<CreatePlanResponse> {
    const api = await this.api();
    return answer(api.POST('/plans', { body: request }));
  }

  async getPlan(namespace: string, name: string): Promise<PlanDetails> {
    const api = await this.api();
    return answer(api.GET('/plans/{namespace}/{name}', { params: { path: { namespace, name } } }));
  }

  async approvePlan(namespace: string, name: string, opts: ApproveOptions): Promise<PlanDetails> {
    const api = await this.api();
    return answer(
      api.POST('/plans/{namespace}/{name}/approve', {
        params: { path: { namespace, name } },
        body: {
          ...(opts.overrideFreeze ? { overrideFreeze: true } : {}),
          ...(opts.overrideReason ? { overrideReason: opts.overrideReason } : {}),
          ...(opts.comment ? { comment: opts.comment } : {}),
          // Required: the approval binds to the plan the user was shown.
          uid: opts.uid,
        },
      }),
    );
  }

  async continuePlan(namespace: string, name: string, opts: ContinueOptions = {}): Promise<PlanDetails> {
    const api = await this.api();
    return answer(
      api.POST('/plans/{namespace}/{name}/continue', {
        params: { path: { namespace, name } },
        body: {
          ...(opts.wave ? { wave: opts.wave } : {}),
          ...(opts.comment ? { comment: opts.comment } : {}),
          // Required: the approval binds to the plan the user was shown.
          uid: opts.uid,
        },
      }),
    );
  }

  async rollbackPlan(
    namespace: string,
    name: string,
    opts: { approve?: boolean; uid?: string } = {},
  ): Promise<PlanDetails> {
    const api = await this.api();
    return answer(
      api.POST('/plans/{namespace}/{name}/rollback', { params: { path: { namespace, name } }, body: opts }),
    );
  }

  async listHistory(f: HistoryFilter = {}): Promise<HistoryList> {
    const api = await this.api();
    return answer(api.GET('/history', { params: { query: f } }));
  }

  async getDora(f: DoraFilter = {}): Promise<DoraReport> {
    const api = await this.api();
    return answer(api.GET('/insights/dora', { params: { query: f } }));
  }

  async listLineStops(opts: { namespace?: string } = {}) {
    const api = await this.api();
    return items<LineStopView>(
      await answer(api.GET('/linestops', { params: { query: { namespace: opts.namespace } } })),
    );
  }

  async stopLine(request: { namespace?: string; reason: string; environments?: string[] }) {
    const api = await this.api();
    return answer(api.POST('/linestops', { body: request }));
  }

  async liftLineStop(namespace: string, name: string) {
    const api = await this.api();
    return answer(api.POST('/linestops/{namespace}/{name}/lift', { params: { path: { namespace, name } } }));
  }

  async proposeAdoption(request: AdoptionRequest): Promise<AdoptionProposal> {
    const api = await this.api();
    return answer(api.POST('/adopt', { body: request }));
  }

  async getMcpUrl() {
    return `${await this.discoveryApi.getBaseUrl('promotions')}/mcp`;
  }
}
