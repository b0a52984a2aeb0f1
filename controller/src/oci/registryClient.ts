import { setTimeout as sleep } from 'node:timers/promises';
import { type BodyInit, fetch, type RequestInit, type Response } from 'undici';
import { defaultEgress, type Egress, egressBlockedIn } from '../net/guardedFetch.js';
import { basicAuth, parseChallenge, tokenUrl } from './auth.js';
import { OciError, RegistryEgressBlocked } from './errors.js';

/**
 * Credentials for one registry host: basic (username/password), a registry token sent as Bearer to
 * the registry itself, or an identity (OAuth2 refresh) token exchanged at the Bearer token service.
 */
export type RegistryAuth =
  | { username: string; password: string }
  | { token: string }
  | { identityToken: string; username?: string };

export interface RegistryEndpoint {
  host: string;
  insecure?: boolean;
  /** Credentials for `host` only: never sent to any other host (token services, redirects, uploads). */
  auth?: RegistryAuth;
  /**
   * Credentials for a Bearer token service on another host (realm host[:port]) for `repository`;
   * absent or undefined: the token is requested anonymously.
   */
  realmAuth?: (realmHost: string, repository: string) => RegistryAuth | undefined;
  /** Why `auth` is absent (e.g. no entry for this host in the credentials Secret), said on 401/403. */
  noAuthReason?: string;
}

export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelayMs: 200, maxDelayMs: 5_000 };

export interface RegistryRequest {
  method: string;
  repository: string;
  /** Path after /v2/<repository>/, or an absolute upload Location the registry handed out. */
  path: string;
  headers?: Record<string, string>;
  /** A factory so a retried request gets a fresh body (streams can be read once). */
  body?: () => BodyInit | undefined;
  /** Token scopes beyond pull on `repository` (e.g. push, or pull on a mount source). */
  scopes?: string[];
  /** Statuses the caller handles itself instead of getting an OciError. */
  accept?: number[];
  /** Streamed bodies cannot be replayed; the caller retries the whole operation. */
  retry?: boolean;
  /** Per-attempt timeout; blob transfers pass 0 (bounded by the caller's signal instead). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** `http://` for loopback or explicitly insecure registries, `https://` otherwise. */
export function registryBaseUrl(ep: RegistryEndpoint): string {
  const host = ep.host === 'docker.io' ? 'registry-1.docker.io' : ep.host;
  const bare = host.replace(/:\d+$/, '');
  const plain = ep.insecure || bare === '127.0.0.1' || bare === 'localhost' || bare === '[::1]';
  return `${plain ? 'http' : 'https'}://${host}`;
}

/** Exponential backoff with full jitter, capped; Retry-After (seconds) wins when the server sends it. */
export function backoffDelay(attempt: number, policy: RetryPolicy, retryAfter?: string | null): number {
  const seconds = retryAfter ? Number(retryAfter) : Number.NaN;
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, policy.maxDelayMs * 4);
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return cap / 2 + Math.random() * (cap / 2);
}

const retryableStatus = (s: number) => s === 429 || s >= 500;

/** Redirects followed per request (registries send blob GETs to storage, sometimes via a CDN). */
const MAX_REDIRECTS = 5;

/**
 * HTTP to one registry: base URL, auth (static basic/token, or the Bearer challenge → token endpoint
 * flow with per-scope token cache) and bounded retries on connection errors, 5xx and 429.
 *
 * Every connection goes through the egress guard (`egress`, default: the controller's, config
 * `egress.allowedCidrs`): the registry host, the token service a challenge names and every redirect
 * Location are refused when they resolve to a loopback, private, link-local or metadata address the
 * operator did not allow. A refusal is a {@link RegistryEgressBlocked}, never retried.
 */
export class RegistryClient {
  readonly base: string;
  private tokens = new Map<string, string>();
  private challenge?: { scheme: string; params: Record<string, string> };
  /** Set when a token service on another host was asked without credentials (for 401 messages). */
  private anonymousRealmHost?: string;

  private readonly egress: Egress;

  constructor(
    readonly endpoint: RegistryEndpoint,
    private retryPolicy: RetryPolicy = DEFAULT_RETRY,
    egress?: Egress,
  ) {
    this.base = registryBaseUrl(endpoint);
    this.egress = egress ?? defaultEgress();
  }

  get host(): string {
    return this.endpoint.host;
  }

  error(code: OciError['code'], repository: string, message: string, cause?: unknown): OciError {
    return new OciError(code, this.endpoint.host, repository, message, cause ? { cause } : undefined);
  }

  url(repository: string, path: string): string {
    if (/^https?:\/\//.test(path)) return path;
    if (path.startsWith('/')) return new URL(path, this.base).toString();
    return `${this.base}/v2/${repository}/${path}`;
  }

  async request(req: RegistryRequest): Promise<Response> {
    const attempts = req.retry === false ? 1 : this.retryPolicy.attempts;
    const scopes = [`repository:${req.repository}:pull`, ...(req.scopes ?? [])];
    let lastErr: unknown;
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0)
        await sleep(backoffDelay(attempt - 1, this.retryPolicy, lastRetryAfter(lastErr)), undefined, {
          signal: req.signal,
        });
      let res: Response;
      try {
        res = await this.send(req, scopes);
        if (res.status === 401 && !this.endpointHasStaticToken()) {
          // First contact or expired token: learn the challenge, get a token, replay once.
          await res.body?.cancel();
          await this.authenticate(req.repository, res.headers.get('www-authenticate'), scopes, req.signal);
          res = await this.send(req, scopes);
        }
      } catch (err) {
        if (req.signal?.aborted) throw err;
        if (err instanceof OciError) throw err;
        const blocked = egressBlockedIn(err);
        if (blocked)
          throw this.blocked(req.repository, `${req.method} ${this.shownPath(req.path)} refused`, blocked, err);
        lastErr = err;
        continue; // connection refused/reset, DNS, timeout
      }
      if (req.accept?.includes(res.status) || res.ok) return res;
      if (retryableStatus(res.status) && attempt + 1 < attempts) {
        lastErr = new HttpStatusError(res.status, res.headers.get('retry-after'));
        await res.body?.cancel();
        continue;
      }
      throw await this.statusError(req, res);
    }
    if (lastErr instanceof HttpStatusError) {
      throw this.error(
        'UNAVAILABLE',
        req.repository,
        `${req.method} ${req.path} kept failing with HTTP ${lastErr.status} after ${attempts} attempts; check the registry's health`,
      );
    }
    throw this.error(
      'UNAVAILABLE',
      req.repository,
      `cannot reach ${this.base} (${describeNetworkError(lastErr)}) after ${attempts} attempts; is the registry running and the host right?`,
      lastErr,
    );
  }

  private endpointHasStaticToken(): boolean {
    return !!this.endpoint.auth && 'token' in this.endpoint.auth;
  }

  /** `path` as messages show it: upload Locations are URLs the registry chose (with session ids). */
  private shownPath(path: string): string {
    return /^https?:\/\//.test(path) ? 'upload' : path;
  }

  blocked(repository: string, what: string, blocked: Error, cause?: unknown): RegistryEgressBlocked {
    return new RegistryEgressBlocked(this.endpoint.host, repository, `${what}: ${blocked.message}`, {
      cause: cause ?? blocked,
    });
  }

  /**
   * One exchange, redirects followed by hand (at most {@link MAX_REDIRECTS}): every hop connects
   * through the egress guard, only http(s) Locations are followed, and the registry's credentials go
   * only to the registry's own origin (a Location elsewhere, e.g. blob storage, gets none).
   */
  private async send(req: RegistryRequest, scopes: string[]): Promise<Response> {
    let url = this.url(req.repository, req.path);
    let method = req.method;
    let body = req.body?.();
    const timeout = req.timeoutMs ?? 30_000;
    const signals = [req.signal, timeout > 0 ? AbortSignal.timeout(timeout) : undefined].filter(
      (s): s is AbortSignal => !!s,
    );
    const signal = signals.length ? AbortSignal.any(signals) : undefined;
    for (let hop = 0; ; hop++) {
      const headers: Record<string, string> = { ...req.headers };
      // Upload Locations and redirects are URLs the registry chooses: credentials go to the registry host only.
      const auth = sameHost(url, this.base) ? this.authorization(scopes) : undefined;
      if (auth) headers.authorization = auth;
      let res: Response;
      try {
        res = await fetch(url, {
          method,
          headers,
          body,
          redirect: 'manual',
          signal,
          dispatcher: this.egress.dispatcher(),
          // Needed by undici for streamed request bodies.
          ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
        } as RequestInit);
      } catch (err) {
        const blocked = egressBlockedIn(err);
        if (blocked && hop > 0)
          throw this.blocked(
            req.repository,
            `${req.method} ${this.shownPath(req.path)} redirected to ${new URL(url).origin}, refused`,
            blocked,
            err,
          );
        throw err;
      }
      const location = res.headers.get('location');
      if (!REDIRECT.has(res.status) || !location) return res;
      await res.body?.cancel();
      const what = `${req.method} ${this.shownPath(req.path)} redirected`;
      if (hop + 1 > MAX_REDIRECTS)
        throw this.error('PROTOCOL', req.repository, `${what} more than ${MAX_REDIRECTS} times`);
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw this.error('PROTOCOL', req.repository, `${what} to an invalid Location`);
      }
      if (next.protocol !== 'http:' && next.protocol !== 'https:')
        throw this.error(
          'PROTOCOL',
          req.repository,
          `${what} to a ${next.protocol} URL; only http and https are followed`,
        );
      if (next.username || next.password)
        throw this.error('PROTOCOL', req.repository, `${what} to a URL with credentials; not followed`);
      // 303, and 301/302 after a POST, turn into a GET without body (as fetch does); 307/308 replay.
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
        method = method === 'HEAD' ? 'HEAD' : 'GET';
        body = undefined;
      } else if (body !== undefined) {
        body = req.body?.();
        if (body instanceof ReadableStream && body.locked)
          throw this.error('PROTOCOL', req.repository, `${what} a streamed upload, which cannot be replayed`);
      }
      url = next.toString();
    }
  }

  private authorization(scopes: string[]): string | undefined {
    const a = this.endpoint.auth;
    if (a && 'token' in a) return `Bearer ${a.token}`;
    if (this.challenge?.scheme === 'bearer') {
      const t = this.tokens.get(scopes.join(' '));
      if (t) return `Bearer ${t}`;
    }
    if (a && 'password' in a && this.challenge?.scheme === 'basic') return basicAuth(a.username, a.password);
    return undefined;
  }

  /** What 401/403 messages say about missing credentials. */
  private missingAuth(): string {
    return this.endpoint.noAuthReason ? `${this.endpoint.noAuthReason}; ` : '';
  }

  private realmHint(): string {
    const h = this.anonymousRealmHost;
    return h
      ? `the token service ${h} got no credentials (those for ${this.endpoint.host} are only sent to ${this.endpoint.host}; add an auths entry matching ${h} to send it any); `
      : '';
  }

  private async authenticate(
    repository: string,
    header: string | null,
    scopes: string[],
    signal?: AbortSignal,
  ): Promise<void> {
    const challenge = parseChallenge(header);
    const a = this.endpoint.auth;
    if (!challenge)
      throw this.error('UNAUTHORIZED', repository, 'registry answered 401 without a WWW-Authenticate challenge');
    this.challenge = challenge;
    if (challenge.scheme === 'basic') {
      if (!a || !('password' in a))
        throw this.error(
          'UNAUTHORIZED',
          repository,
          `${this.missingAuth()}registry requires basic auth (username and password); set them in the Environment registry credentialsSecretRef`,
        );
      return;
    }
    if (challenge.scheme !== 'bearer')
      throw this.error('UNAUTHORIZED', repository, `unsupported auth scheme ${challenge.scheme}`);
    const url = tokenUrl(challenge.params, scopes);
    // The registry's credentials go to its token service only when that is the same host; a realm
    // elsewhere gets only credentials that name its own host (realmAuth), else none (anonymous).
    const realmHost = new URL(url).host;
    const creds = sameHost(url, this.base) ? a : this.endpoint.realmAuth?.(realmHost, repository);
    this.anonymousRealmHost = a && !creds ? realmHost : undefined;
    const headers: Record<string, string> = {};
    let target = url;
    let init: RequestInit = {};
    if (creds && 'identityToken' in creds) {
      // OAuth2 refresh-token grant, as docker does with an identity token.
      const form = new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: creds.identityToken,
        client_id: 'kpromo',
        service: challenge.params.service ?? '',
        scope: scopes.join(' '),
      });
      headers['content-type'] = 'application/x-www-form-urlencoded';
      target = challenge.params.realm;
      init = { method: 'POST', body: form.toString() };
    } else if (creds && 'password' in creds) headers.authorization = basicAuth(creds.username, creds.password);
    let res: Response;
    try {
      const realm = new URL(target);
      if (realm.protocol !== 'http:' && realm.protocol !== 'https:')
        throw this.error(
          'PROTOCOL',
          repository,
          `token service ${challenge.params.realm} is not an http or https URL; not contacted`,
        );
      res = await fetch(target, {
        ...init,
        headers,
        redirect: 'error',
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(30_000)]) : AbortSignal.timeout(30_000),
        dispatcher: this.egress.dispatcher(),
      });
    } catch (err) {
      if (err instanceof OciError) throw err;
      const blocked = egressBlockedIn(err);
      if (blocked) throw this.blocked(repository, `token service ${challenge.params.realm} refused`, blocked, err);
      throw this.error(
        'UNAVAILABLE',
        repository,
        `token service ${challenge.params.realm} unreachable (${describeNetworkError(err)})`,
        err,
      );
    }
    if (res.status === 401 || res.status === 403) {
      throw this.error(
        'UNAUTHORIZED',
        repository,
        creds
          ? `token service ${challenge.params.realm} refused the credentials (HTTP ${res.status}); check the registry credentials Secret`
          : `${this.missingAuth()}${this.realmHint()}token service ${challenge.params.realm} refused an anonymous token (HTTP ${res.status})`,
      );
    }
    if (!res.ok)
      throw this.error(
        'UNAVAILABLE',
        repository,
        `token service ${challenge.params.realm} answered HTTP ${res.status}`,
      );
    const body = (await res.json()) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    if (!token) throw this.error('PROTOCOL', repository, `token service ${challenge.params.realm} returned no token`);
    this.tokens.set(scopes.join(' '), token);
  }

  private async statusError(req: RegistryRequest, res: Response): Promise<OciError> {
    const detail = await registryErrorDetail(res);
    const what = `${req.method} ${req.path.startsWith('http') ? 'upload' : req.path} → HTTP ${res.status}${detail ? ` (${detail})` : ''}`;
    if (res.status === 401 || res.status === 403) {
      return this.error(
        'UNAUTHORIZED',
        req.repository,
        this.endpoint.auth
          ? `${this.realmHint()}${what}; check the registry credentials and that they allow ${req.method === 'GET' || req.method === 'HEAD' ? 'pull' : 'push'}`
          : `${this.missingAuth()}${what}`,
      );
    }
    if (res.status === 404) return this.error('NOT_FOUND', req.repository, what);
    if (retryableStatus(res.status)) return this.error('UNAVAILABLE', req.repository, what);
    if (/DIGEST_INVALID/.test(detail)) return this.error('DIGEST_MISMATCH', req.repository, what);
    return this.error('PROTOCOL', req.repository, what);
  }
}

const REDIRECT = new Set([301, 302, 303, 307, 308]);

class HttpStatusError extends Error {
  constructor(
    public status: number,
    public retryAfter: string | null,
  ) {
    super(`HTTP ${status}`);
  }
}

/** Same scheme, host and port (the URL origin). */
function sameHost(url: string, base: string): boolean {
  try {
    return new URL(url).origin === new URL(base).origin;
  } catch {
    return false;
  }
}

function lastRetryAfter(err: unknown): string | null {
  return err instanceof HttpStatusError ? err.retryAfter : null;
}

function describeNetworkError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? err.message;
}

/** The distribution spec's `{"errors":[{code,message}]}` body, condensed for messages. */
async function registryErrorDetail(res: Response): Promise<string> {
  try {
    const text = await res.text();
    const parsed = JSON.parse(text) as { errors?: Array<{ code?: string; message?: string }> };
    return (parsed.errors ?? []).map((e) => `${e.code}: ${e.message}`).join('; ');
  } catch {
    return '';
  }
}
