import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/port.js';
import type { Logger } from './log.js';

export type PortApi = Client<paths>;

export interface PortClientOptions {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  log: Logger;
  /** Attempts per request for 429/5xx/network errors before giving up (the sink retries later). */
  maxAttempts?: number;
  /** Upper bound for one wait, so a bogus reset header cannot stall the exporter for hours. */
  maxBackoffMs?: number;
  /** Refresh this long before the token expires. */
  refreshMarginMs?: number;
  userAgent?: string;
}

export interface PortClientStats {
  calls: number;
  tokenFetches: number;
  retries: number;
}

/** Wait requested by a 429/503: retry-after (seconds or date) or x-ratelimit-reset (seconds, or epoch seconds). */
export function retryDelayMs(headers: Headers, attempt: number, now = Date.now()): number {
  const ra = headers.get('retry-after');
  if (ra) {
    const s = Number(ra);
    if (Number.isFinite(s)) return Math.max(0, s * 1000);
    const d = Date.parse(ra);
    if (Number.isFinite(d)) return Math.max(0, d - now);
  }
  const reset = Number(headers.get('x-ratelimit-reset'));
  if (headers.get('x-ratelimit-reset') && Number.isFinite(reset)) {
    return reset > 1e9 ? Math.max(0, reset * 1000 - now) : reset * 1000;
  }
  return Math.min(200 * 2 ** attempt, 10_000) * (0.5 + Math.random() / 2);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The typed client: openapi-fetch over a fetch that adds the bearer token (fetched and refreshed
 * before `expiresIn`, and again on 401) and retries 429/5xx/network errors with backoff.
 */
export function createPortClient(opts: PortClientOptions): { api: PortApi; stats: PortClientStats } {
  const stats: PortClientStats = { calls: 0, tokenFetches: 0, retries: 0 };
  const maxAttempts = opts.maxAttempts ?? 6;
  const maxBackoff = opts.maxBackoffMs ?? 30_000;
  const margin = opts.refreshMarginMs ?? 60_000;
  let token: { value: string; refreshAt: number } | undefined;
  let pending: Promise<string> | undefined;

  const authApi = createClient<paths>({ baseUrl: opts.baseUrl, fetch: (req) => send(req, false) });

  async function fetchToken(): Promise<string> {
    stats.tokenFetches++;
    const { data, error, response } = await authApi.POST('/v1/auth/access_token', {
      body: { clientId: opts.clientId, clientSecret: opts.clientSecret },
    });
    if (!data) throw new Error(`Port token request failed: HTTP ${response.status} ${JSON.stringify(error)}`);
    const ttl = data.expiresIn * 1000;
    token = { value: data.accessToken, refreshAt: Date.now() + Math.max(ttl - Math.min(margin, ttl / 10), 0) };
    opts.log.debug({ expiresIn: data.expiresIn }, 'port token obtained');
    return token.value;
  }

  function currentToken(): Promise<string> {
    if (token && Date.now() < token.refreshAt) return Promise.resolve(token.value);
    // One refresh at a time; concurrent requests share it.
    pending ??= fetchToken().finally(() => {
      pending = undefined;
    });
    return pending;
  }

  async function send(req: Request, auth: boolean): Promise<Response> {
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      const r = req.clone();
      if (auth) r.headers.set('authorization', `Bearer ${await currentToken()}`);
      if (opts.userAgent) r.headers.set('user-agent', opts.userAgent);
      let res: Response;
      try {
        stats.calls++;
        res = await fetch(r);
      } catch (e) {
        if (attempt + 1 >= maxAttempts)
          throw new Error(`Port ${req.method} ${new URL(req.url).pathname} failed: ${(e as Error).message}`);
        stats.retries++;
        await sleep(Math.min(retryDelayMs(new Headers(), attempt), maxBackoff));
        continue;
      }
      if (res.status === 401 && auth && !refreshed) {
        // Expired or revoked token: fetch a new one once, then retry.
        refreshed = true;
        token = undefined;
        await res.body?.cancel();
        continue;
      }
      if ((res.status === 429 || res.status >= 500) && attempt + 1 < maxAttempts) {
        const wait = Math.min(retryDelayMs(res.headers, attempt), maxBackoff);
        opts.log.debug({ status: res.status, wait, path: new URL(req.url).pathname }, 'port retry');
        stats.retries++;
        await res.body?.cancel();
        await sleep(wait);
        continue;
      }
      return res;
    }
  }

  const api = createClient<paths>({ baseUrl: opts.baseUrl, fetch: (req) => send(req, true) });
  return { api, stats };
}

/** One entity in a bulk upsert body, as generated from the spec. */
export type PortBulkEntity = NonNullable<
  paths['/v1/blueprints/{blueprint_identifier}/entities/bulk']['post']['requestBody']
>['content']['application/json']['entities'][number];

/**
 * The generator types free-form `properties` (`{type: object, default: {}}`) as an empty record,
 * so mapped property values are passed through this one cast.
 */
export function toPortEntity(e: {
  identifier: string;
  properties: Record<string, unknown>;
  relations: Record<string, string | string[] | null>;
}): PortBulkEntity {
  return { ...e, properties: e.properties as PortBulkEntity['properties'] };
}
