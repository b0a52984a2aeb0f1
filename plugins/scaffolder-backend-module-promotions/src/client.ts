import type { AuthService, BackstageCredentials, DiscoveryService } from '@backstage/backend-plugin-api';
import { NotAllowedError } from '@backstage/errors';
import {
  answer,
  type BackendApi,
  type BackendPaths,
  backendApi,
  toBackstageError,
} from '@kpromo/plugin-promotions-common';

/** The body of `POST /plans` as it travels (the OpenAPI document's request body). */
type CreatePlanBodyWire = NonNullable<BackendPaths['/plans']['post']['requestBody']>['content']['application/json'];

/** The body of `POST /adopt` as it travels. */
type AdoptBodyWire = NonNullable<BackendPaths['/adopt']['post']['requestBody']>['content']['application/json'];

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

  /** Runs one typed call of the backend API (derived from the contract) as the task's initiator. */
  private async call<D>(
    credentials: BackstageCredentials,
    fn: (api: BackendApi) => Promise<{ data?: D; error?: unknown; response: Response }>,
    signal?: AbortSignal,
  ) {
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
    const timeout = AbortSignal.timeout(60_000);
    const api = backendApi({
      baseUrl: await this.o.discovery.getBaseUrl('promotions'),
      headers: { accept: 'application/json', authorization: `Bearer ${token}` },
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    try {
      // The backend answers {error: {name, message}}: both are kept (a controller refusal keeps its message).
      return await answer(fn(api));
    } catch (e) {
      throw toBackstageError(e, 'promotions backend');
    }
  }

  /** `POST /plans` (body as the route takes it: from, to, namespace?, applications?, approve?, ...). */
  createPlan(credentials: BackstageCredentials, body: CreatePlanBodyWire) {
    return this.call(credentials, (api) => api.POST('/plans', { body }));
  }

  /** `POST /plans/{namespace}/{name}/approve` `{uid, overrideFreeze?, overrideReason?, comment?}` (uid: the plan reviewed; 409 if it changed). */
  approve(
    credentials: BackstageCredentials,
    plan: PlanRef,
    body: { overrideFreeze?: boolean; overrideReason?: string; comment?: string; uid: string },
  ) {
    return this.call(credentials, (api) =>
      api.POST('/plans/{namespace}/{name}/approve', { params: { path: plan }, body }),
    );
  }

  /** `POST /plans/{namespace}/{name}/continue` `{uid, wave?, comment?}` (uid: the plan reviewed; 409 if it changed). */
  continuePlan(
    credentials: BackstageCredentials,
    plan: PlanRef,
    body: { wave?: string; comment?: string; uid: string },
  ) {
    return this.call(credentials, (api) =>
      api.POST('/plans/{namespace}/{name}/continue', { params: { path: plan }, body }),
    );
  }

  /** `POST /plans/{namespace}/{name}/rollback` `{name?, approve?, uid?}` (uid: the plan reviewed, required unless approve is false; 409 if it changed). */
  rollback(credentials: BackstageCredentials, plan: PlanRef, body: { name?: string; approve?: boolean; uid?: string }) {
    return this.call(credentials, (api) =>
      api.POST('/plans/{namespace}/{name}/rollback', { params: { path: plan }, body }),
    );
  }

  /** `GET /plans/{namespace}/{name}` → `{plan, progress}`. */
  getPlan(credentials: BackstageCredentials, plan: PlanRef, signal?: AbortSignal) {
    return this.call(credentials, (api) => api.GET('/plans/{namespace}/{name}', { params: { path: plan } }), signal);
  }

  /** `POST /adopt`: Applications proposed for what runs in a flow's Environments (nothing is written). */
  proposeAdoption(credentials: BackstageCredentials, body: AdoptBodyWire, signal?: AbortSignal) {
    return this.call(credentials, (api) => api.POST('/adopt', { body }), signal);
  }

  /** `GET /applications?namespace=` (the backend's default namespace when omitted). */
  applications(credentials: BackstageCredentials, namespace: string | undefined, signal?: AbortSignal) {
    return this.call(credentials, (api) => api.GET('/applications', { params: { query: { namespace } } }), signal);
  }
}
