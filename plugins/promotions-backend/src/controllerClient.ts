import { ConflictError, InputError, NotFoundError, ServiceUnavailableError } from '@backstage/errors';
import { KPROMO_USER_HEADER } from '@kpromo/plugin-promotions-common';

/**
 * Thin client of the controller's JSON API (/api/v1/...). Every call names the Backstage caller
 * in the x-kpromo-user header (user or service entity ref), and controller 400/404/409 answers
 * become the matching Backstage errors with the controller's message.
 */
export class ControllerClient {
  constructor(private readonly baseUrl: () => Promise<string>) {}

  async request<T>(
    method: 'GET' | 'POST',
    path: string,
    opts: { user: string; query?: Record<string, string | string[] | undefined>; body?: unknown; signal?: AbortSignal },
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
          [KPROMO_USER_HEADER]: opts.user,
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
    if (res.status === 404) throw new NotFoundError(msg);
    if (res.status === 409) throw new ConflictError(msg);
    throw new ServiceUnavailableError(`kpromo controller answered ${res.status}: ${msg}`);
  }
}
