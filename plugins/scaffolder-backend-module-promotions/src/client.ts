import type { AuthService, BackstageCredentials, DiscoveryService } from '@backstage/backend-plugin-api';
import {
  AuthenticationError,
  ConflictError,
  InputError,
  NotAllowedError,
  NotFoundError,
  ServiceUnavailableError,
} from '@backstage/errors';
import type { ApplicationInfo, CreatePlanResponse, ListResponse, PlanDetails } from '@kpromo/plugin-promotions-common';

const ERRORS: Record<string, new (message: string) => Error> = {
  InputError,
  AuthenticationError,
  NotAllowedError,
  NotFoundError,
  ConflictError,
  ServiceUnavailableError,
};

/** A plan reference in the promotions backend's routes. */
export interface PlanRef {
  namespace: string;
  name: string;
}

/**
 * Client of the promotions backend plugin's REST API (`/api/promotions`) for the scaffolder: every
 * call carries a plugin-to-plugin token issued **on behalf of the task's initiator**, so the
 * promotions backend authenticates the initiating user, checks its Backstage permissions for that
 * user and has the controller act as that user (`x-kpromo-user` + the user's ownership refs as
 * `x-kpromo-groups`), exactly as when the user calls the routes.
 *
 * Only user initiators are accepted. A token issued on behalf of a service principal would name the
 * scaffolder plugin itself, not the service that started the task, so such calls are refused rather
 * than made under another identity; so are tasks without initiator credentials.
 */
export class PromotionsBackendClient {
  constructor(private readonly o: { auth: AuthService; discovery: DiscoveryService }) {}

  private async request<T>(
    credentials: BackstageCredentials,
    method: 'GET' | 'POST',
    path: string,
    opts: { query?: Record<string, string | undefined>; body?: unknown; signal?: AbortSignal } = {},
  ): Promise<T> {
    if (!this.o.auth.isPrincipal(credentials, 'user')) {
      const p = credentials.principal as { type: string; subject?: string };
      throw new NotAllowedError(
        `kpromo scaffolder actions act as the user who started the task; this task was started by ${p.type === 'service' ? `service ${p.subject}` : `a ${p.type} principal`}, which cannot be forwarded to the promotions backend`,
      );
    }
    const { token } = await this.o.auth.getPluginRequestToken({
      onBehalfOf: credentials,
      targetPluginId: 'promotions',
    });
    const url = new URL(`${(await this.o.discovery.getBaseUrl('promotions')).replace(/\/+$/, '')}${path}`);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    const timeout = AbortSignal.timeout(60_000);
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: {
          accept: 'application/json',
          authorization: `Bearer ${token}`,
          ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout,
      });
    } catch (e) {
      throw new ServiceUnavailableError(`promotions backend unreachable: ${(e as Error).message}`);
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (res.ok) return json as T;
    // The backend answers {error: {name, message}}: keep both (a controller refusal keeps its message).
    const err = (json as { error?: { name?: string; message?: string } } | undefined)?.error;
    const message = err?.message ?? (text.slice(0, 300) || res.statusText);
    const E = err?.name ? ERRORS[err.name] : undefined;
    if (E) throw new E(message);
    throw new ServiceUnavailableError(`promotions backend answered ${res.status}: ${message}`);
  }

  /** `POST /plans` (body as the route takes it: from, to, namespace?, applications?, approve?, ...). */
  createPlan(credentials: BackstageCredentials, body: Record<string, unknown>): Promise<CreatePlanResponse> {
    return this.request(credentials, 'POST', '/plans', { body });
  }

  /** `POST /plans/:namespace/:name/approve` `{overrideFreeze?, comment?, uid?}` (uid: the plan reviewed; 409 if it changed). */
  approve(
    credentials: BackstageCredentials,
    plan: PlanRef,
    body: { overrideFreeze?: boolean; comment?: string; uid?: string },
  ): Promise<PlanDetails> {
    return this.request(credentials, 'POST', `${planPath(plan)}/approve`, { body });
  }

  /** `POST /plans/:namespace/:name/rollback` `{name?, approve?}`. */
  rollback(
    credentials: BackstageCredentials,
    plan: PlanRef,
    body: { name?: string; approve?: boolean },
  ): Promise<PlanDetails> {
    return this.request(credentials, 'POST', `${planPath(plan)}/rollback`, { body });
  }

  /** `GET /plans/:namespace/:name` → `{plan, progress}`. */
  getPlan(credentials: BackstageCredentials, plan: PlanRef, signal?: AbortSignal): Promise<PlanDetails> {
    return this.request(credentials, 'GET', planPath(plan), { signal });
  }

  /** `GET /applications?namespace=` (the backend's default namespace when omitted). */
  applications(
    credentials: BackstageCredentials,
    namespace: string | undefined,
    signal?: AbortSignal,
  ): Promise<ListResponse<ApplicationInfo>> {
    return this.request(credentials, 'GET', '/applications', { query: { namespace }, signal });
  }
}

const planPath = (p: PlanRef) => `/plans/${encodeURIComponent(p.namespace)}/${encodeURIComponent(p.name)}`;
