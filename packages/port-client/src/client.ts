import createClient, { type Client } from 'openapi-fetch';
import { type BackoffPolicy, DEFAULT_BACKOFF, retryDecision } from './backoff.js';
import type { paths } from './generated/port.js';

export type PortApi = Client<paths>;

/** Port's API hosts (the spec's `servers`), by region. */
export const PORT_REGIONS = { eu: 'https://api.port.io', us: 'https://api.us.port.io' } as const;

export type PortClientEvent =
  | { type: 'token'; expiresIn: number }
  | { type: 'token-rejected'; method: string; path: string }
  | { type: 'retry'; method: string; path: string; status?: number; error?: string; attempt: number; delayMs: number };

export interface PortClientOptions {
  /** The Port API of your region (PORT_REGIONS), or a stand-in. Must be http(s) without credentials. */
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** Attempts per call for 429/5xx/network errors before the last answer is returned (or the error thrown). */
  maxAttempts?: number;
  baseBackoffMs?: number;
  /** Upper bound for one wait, so a bogus reset header cannot stall the caller for hours. */
  maxBackoffMs?: number;
  /** Refresh the token this long before it expires (at most a tenth of its lifetime). */
  refreshMarginMs?: number;
  userAgent?: string;
  /** Token fetches, 401 refreshes and retries, for logging. Never carries a credential. */
  onEvent?: (e: PortClientEvent) => void;
  /** The fetch to call (tests); global fetch by default. */
  fetch?: (req: Request) => Promise<Response>;
}

export interface PortClientStats {
  calls: number;
  tokenFetches: number;
  retries: number;
}

/** A failed Port call: method, path (no query), status when Port answered, and Port's message. */
export class PortApiError extends Error {
  override readonly name = 'PortApiError';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number | undefined,
    readonly portMessage: string,
  ) {
    super(`Port ${method} ${path} ${status === undefined ? 'failed' : `answered ${status}`}: ${portMessage}`);
  }
}

/** Port's message from an error body (`{ok: false, error, message}`), bounded for logs. */
export function portMessage(body: unknown): string {
  const b = body && typeof body === 'object' ? (body as { message?: unknown; error?: unknown }) : undefined;
  const m =
    typeof b?.message === 'string'
      ? b.message
      : typeof b?.error === 'string'
        ? b.error
        : typeof body === 'string' && body
          ? body
          : JSON.stringify(body ?? null);
  return m.length > 300 ? `${m.slice(0, 300)}…` : m;
}

/** The base URL, checked: http(s), no user info, query or fragment. */
export function checkBaseUrl(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error(`Port baseUrl ${JSON.stringify(raw)} is not a URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw new Error(`Port baseUrl must be http(s), got ${JSON.stringify(u.protocol)}`);
  if (u.username || u.password || u.search || u.hash)
    throw new Error('Port baseUrl must not carry credentials, a query or a fragment');
  return u;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The typed Port client: openapi-fetch over a fetch that
 * - sends requests only under `baseUrl` and follows no redirect, so the token and the client
 *   secret go to the configured Port API and nowhere else;
 * - adds the bearer token from `POST /v1/auth/access_token`, cached until shortly before
 *   `expiresIn`, shared by concurrent calls, and fetched again once when a call answers 401;
 * - retries 429, 5xx and network errors as {@link retryDecision} says (the server's Retry-After or
 *   x-ratelimit-reset, else exponential backoff with jitter), at most `maxAttempts` times. When the
 *   attempts are spent the last answer is returned as usual (`error`, `response.status`); a call
 *   that never got an answer throws a {@link PortApiError}.
 */
export function createPortClient(opts: PortClientOptions): { api: PortApi; stats: PortClientStats } {
  const base = checkBaseUrl(opts.baseUrl);
  const basePath = base.pathname.replace(/\/?$/, '/');
  const policy: BackoffPolicy = {
    maxAttempts: opts.maxAttempts ?? DEFAULT_BACKOFF.maxAttempts,
    baseMs: opts.baseBackoffMs ?? DEFAULT_BACKOFF.baseMs,
    maxMs: opts.maxBackoffMs ?? DEFAULT_BACKOFF.maxMs,
  };
  const margin = opts.refreshMarginMs ?? 60_000;
  const doFetch = opts.fetch ?? ((r: Request) => fetch(r));
  const emit = opts.onEvent ?? (() => undefined);
  const stats: PortClientStats = { calls: 0, tokenFetches: 0, retries: 0 };
  let token: { value: string; refreshAt: number } | undefined;
  let pending: Promise<string> | undefined;
  // Port does not echo credentials; this makes sure no message ever does.
  const redact = (s: string) => (opts.clientSecret ? s.replaceAll(opts.clientSecret, '[redacted]') : s);

  async function fetchToken(): Promise<string> {
    stats.tokenFetches++;
    const { data, error, response } = await authApi.POST('/v1/auth/access_token', {
      body: { clientId: opts.clientId, clientSecret: opts.clientSecret },
    });
    if (!data) throw new PortApiError('POST', '/v1/auth/access_token', response.status, redact(portMessage(error)));
    const ttl = data.expiresIn * 1000;
    token = { value: data.accessToken, refreshAt: Date.now() + Math.max(ttl - Math.min(margin, ttl / 10), 0) };
    emit({ type: 'token', expiresIn: data.expiresIn });
    return token.value;
  }

  function currentToken(): Promise<string> {
    if (token && Date.now() < token.refreshAt) return Promise.resolve(token.value);
    pending ??= fetchToken().finally(() => {
      pending = undefined;
    });
    return pending;
  }

  async function send(req: Request, auth: boolean): Promise<Response> {
    const url = new URL(req.url);
    const method = req.method;
    const path = url.pathname;
    if (url.origin !== base.origin || !`${path}/`.startsWith(basePath))
      throw new PortApiError(method, path, undefined, `refused: ${url.origin} is not the configured Port API`);
    let refreshed = false;
    for (let attempt = 0; ; ) {
      const r = new Request(req.clone(), { redirect: 'manual' });
      const used = auth ? await currentToken() : undefined;
      if (used) r.headers.set('authorization', `Bearer ${used}`);
      if (opts.userAgent) r.headers.set('user-agent', opts.userAgent);
      let res: Response | undefined;
      let failure: Error | undefined;
      stats.calls++;
      try {
        res = await doFetch(r);
      } catch (e) {
        failure = e as Error;
      }
      if (res?.status === 401 && used && !refreshed) {
        // Expired or revoked token: fetch a new one (unless a concurrent call already did), once.
        refreshed = true;
        if (token?.value === used) token = undefined;
        await res.body?.cancel();
        emit({ type: 'token-rejected', method, path });
        continue;
      }
      const d = retryDecision({ attempt, status: res?.status, headers: res?.headers }, policy);
      if (!d.retry) {
        if (res) return res;
        const cause = (failure?.cause as { code?: string } | undefined)?.code;
        throw new PortApiError(
          method,
          path,
          undefined,
          redact(`no answer after ${attempt + 1} attempt(s): ${failure?.message}${cause ? ` (${cause})` : ''}`),
        );
      }
      stats.retries++;
      emit({
        type: 'retry',
        method,
        path,
        ...(res ? { status: res.status } : { error: redact(String(failure?.message)) }),
        attempt,
        delayMs: Math.round(d.delayMs),
      });
      await res?.body?.cancel();
      await sleep(d.delayMs);
      attempt++;
    }
  }

  const authApi = createClient<paths>({ baseUrl: base.href, fetch: (req) => send(req, false) });
  const api = createClient<paths>({ baseUrl: base.href, fetch: (req) => send(req, true) });
  return { api, stats };
}
