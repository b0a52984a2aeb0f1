import {
  AuthenticationError,
  ConflictError,
  InputError,
  NotAllowedError,
  NotFoundError,
  ServiceUnavailableError,
} from '@backstage/errors';
import { KPROMO_GROUPS_HEADER, KPROMO_USER_HEADER } from '@kpromo/plugin-promotions-common';

/**
 * The identity a controller call is made for: the Backstage user entity ref (with the user's
 * ownership entity refs as groups), `service:<subject>` for service principals, or `port:<email>`
 * for Port runs. The controller authorises (and writes) as this identity.
 */
export interface Actor {
  user: string;
  groups?: string[];
}

/** The headers that make the controller act for `actor` (Kubernetes-style impersonation). */
export function actorHeaders(actor: Actor): Record<string, string> {
  const groups = [...new Set(actor.groups ?? [])].filter((g) => g && !g.includes(','));
  return {
    [KPROMO_USER_HEADER]: actor.user,
    ...(groups.length ? { [KPROMO_GROUPS_HEADER]: groups.join(',') } : {}),
  };
}

/**
 * Thin client of the controller's JSON API (/api/v1/...). Every call authenticates with the
 * backend's bearer token (`promotions.controller.token`) and names the identity it acts for in
 * x-kpromo-user / x-kpromo-groups; the controller accepts that only when RBAC lets the token's user
 * impersonate it, then authorises the call as that identity. Controller 400/401/403/404/409 answers
 * become the matching Backstage errors with the controller's message.
 */
export class ControllerClient {
  constructor(
    private readonly baseUrl: () => Promise<string>,
    private readonly token?: string,
  ) {}

  async request<T>(
    method: 'GET' | 'POST',
    path: string,
    opts: {
      as: Actor;
      query?: Record<string, string | string[] | undefined>;
      body?: unknown;
      signal?: AbortSignal;
    },
  ): Promise<T> {
    const url = new URL(`${await this.baseUrl()}/api/v1${path}`);
    for (const [k, v] of Object.entries(opts.query ?? {}))
      if (v !== undefined && (!Array.isArray(v) || v.length))
        url.searchParams.set(k, Array.isArray(v) ? v.join(',') : v);
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: {
          accept: 'application/json',
          ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
          ...actorHeaders(opts.as),
          ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: opts.signal ?? AbortSignal.timeout(30_000),
      });
    } catch (e) {
      throw new ServiceUnavailableError(`kpromo controller unreachable: ${(e as Error).message}`);
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (res.ok) return json as T;
    const msg = (json as { error?: string } | undefined)?.error ?? (text.slice(0, 300) || res.statusText);
    if (res.status === 400) throw new InputError(msg);
    // 401: the controller did not accept the backend's own token (promotions.controller.token).
    if (res.status === 401)
      throw new AuthenticationError(
        `kpromo controller refused the backend's credentials (promotions.controller.token): ${msg}`,
      );
    // 403: Kubernetes RBAC refused the identity (impersonation, or the verb for this plan/environment).
    if (res.status === 403) throw new NotAllowedError(msg);
    if (res.status === 404) throw new NotFoundError(msg);
    if (res.status === 409) throw new ConflictError(msg);
    throw new ServiceUnavailableError(`kpromo controller answered ${res.status}: ${msg}`);
  }
}
