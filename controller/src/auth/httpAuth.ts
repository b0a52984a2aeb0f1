import type { IncomingHttpHeaders } from 'node:http';
import { KeyedRateLimiter } from '../kube/rateLimit.js';
import type { KubeRest } from '../kube/rest.js';
import { defaultEgress, type Egress } from '../net/guardedFetch.js';
import type { Logger } from '../observability/logger.js';
import { metrics } from '../observability/metrics.js';
import { SampledLog } from '../observability/sampledLog.js';
import { type AgentsConfig, markAgent } from './agents.js';
import { AuthBusy, AuthError, Authenticator, loadStaticTokens } from './authenticator.js';
import type { Authorizer } from './authorizer.js';
import { type AuthConfig, FLOOD_DEFAULTS } from './config.js';
import { type Caller, ImpersonationError, impersonate, impersonationRequest } from './identity.js';
import { IssuerUnavailable, JwtAuthenticator } from './oidc.js';

export interface HttpAuthDeps {
  authenticator: Pick<Authenticator, 'authenticate'> & Partial<Pick<Authenticator, 'known'>>;
  authorizer: Pick<Authorizer, 'check'>;
  /**
   * Per client address, a token bucket for requests whose token is not known valid (auth.perSource):
   * empty, they get 429 with Retry-After before any work. None: no limit.
   */
  perSource?: KeyedRateLimiter;
  /** Where refusals before authentication are logged, sampled (auth.refusalLog); both doors share it. */
  refusals?: SampledLog;
  /** Which identities are agents (auth.agents). */
  agents?: AgentsConfig;
}

/**
 * Why a request was not let in: 401 (who are you?), 403 (not as that user), 429 (too many unknown
 * tokens from this address), 503 (cannot check now). The message is for the client (short, no
 * internal detail); `detail` is for the log.
 */
export class HttpAuthFailure extends Error {
  constructor(
    readonly status: 401 | 403 | 429 | 503,
    message: string,
    /** The authenticated caller, when the refusal came after authentication (for the audit line). */
    readonly authenticated?: Caller,
    /** Seconds, for the Retry-After header of a 429 or 503. */
    readonly retryAfter?: number,
    /** What went wrong, for the log only. */
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'HttpAuthFailure';
  }
}

/**
 * The per-source key of a client address: an IPv4 address as is (IPv4-mapped IPv6 too), an IPv6
 * address by its /64 (one host usually holds a whole /64, so counting single addresses would be
 * no limit at all).
 */
export function sourceKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const a = address.toLowerCase().replace(/%.*$/, '');
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (v4) return v4[1];
  if (!a.includes(':')) return a;
  const [head, tail] = a.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

const bearerOf = (headers: IncomingHttpHeaders): string | undefined => {
  const h = headers.authorization;
  const m = h ? /^Bearer\s+(\S+)\s*$/i.exec(h) : null;
  return m?.[1];
};

const tooMany = (wait: number) =>
  new HttpAuthFailure(
    429,
    'too many requests with unknown or invalid tokens from this address; retry later',
    undefined,
    wait,
  );

/**
 * A cheap look before any work (reading a body, say): 429 when `source` has no budget left and the
 * request's token is not one known to be valid. Takes nothing; {@link authenticateHttp} charges.
 */
export function floodGate(
  deps: HttpAuthDeps,
  headers: IncomingHttpHeaders,
  source: string | undefined,
): HttpAuthFailure | undefined {
  if (!deps.perSource?.enabled) return undefined;
  const token = bearerOf(headers);
  if (token && deps.authenticator.known?.(token)) return undefined;
  const wait = deps.perSource.peek(sourceKey(source));
  if (!wait) return undefined;
  metrics.authRefusals.inc({ reason: 'rate_limited' });
  return tooMany(wait);
}

/** Takes one from the source's bucket: a request whose token is not known valid. */
function charge(deps: HttpAuthDeps, source: string | undefined) {
  const wait = deps.perSource?.take(sourceKey(source)) ?? 0;
  if (wait) {
    metrics.authRefusals.inc({ reason: 'rate_limited' });
    throw tooMany(wait);
  }
}

/**
 * The one way an HTTP door (JSON API, MCP) learns its caller: a bearer token (static token, JWT of
 * a configured issuer, or TokenReview), then, if x-kpromo-user is present, impersonation that RBAC must allow
 * (`impersonate` on the user and each group), exactly like `kubectl --as`.
 */
export async function authenticateHttp(
  deps: HttpAuthDeps,
  headers: IncomingHttpHeaders,
  /** The client's address (the socket's), for the per-source limit. */
  source?: string,
): Promise<Caller> {
  const token = bearerOf(headers);
  if (!token) {
    charge(deps, source);
    metrics.authRefusals.inc({ reason: 'missing' });
    throw new HttpAuthFailure(401, 'missing bearer token (Authorization: Bearer <token>)');
  }
  let authenticated = deps.authenticator.known?.(token);
  if (!authenticated) {
    // Only tokens not already known valid cost the source anything: a client with a good token is
    // never refused because its address also sends junk.
    charge(deps, source);
    try {
      authenticated = await deps.authenticator.authenticate(token);
    } catch (e) {
      if (e instanceof AuthError) {
        metrics.authRefusals.inc({ reason: e.why });
        throw new HttpAuthFailure(401, e.message);
      }
      if (e instanceof AuthBusy) {
        metrics.authRefusals.inc({ reason: 'busy' });
        throw new HttpAuthFailure(503, 'token validation busy, retry later', undefined, 1, e.message);
      }
      metrics.authRefusals.inc({ reason: 'unavailable' });
      // An unreachable issuer's message names only the configured issuer (docs/auth.md); anything
      // else (apiserver errors, addresses) stays in the log.
      const msg = `token validation unavailable, retry later${e instanceof IssuerUnavailable ? ` (${e.message})` : ''}`;
      throw new HttpAuthFailure(503, msg, undefined, 5, (e as Error).message.split('\n')[0]);
    }
  }
  // Marked before impersonation, so an agent acting through a proxy's header stays one.
  authenticated = markAgent(authenticated, deps.agents);
  try {
    const imp = impersonationRequest(headers);
    return imp ? await impersonate(deps.authorizer, authenticated, imp) : authenticated;
  } catch (e) {
    if (e instanceof ImpersonationError) throw new HttpAuthFailure(403, e.message, authenticated);
    throw new HttpAuthFailure(
      503,
      'authorization unavailable, retry later',
      authenticated,
      5,
      (e as Error).message.split('\n')[0],
    );
  }
}

/** The headers of a refusal: the challenge of a 401, Retry-After of a 429/503. */
export function refusalHeaders(e: HttpAuthFailure, realm: string, hadToken: boolean): Record<string, string> {
  return {
    ...(e.status === 401 ? { 'WWW-Authenticate': bearerChallenge(realm, hadToken) } : {}),
    ...(e.retryAfter ? { 'Retry-After': String(e.retryAfter) } : {}),
  };
}

/** `Bearer realm=…` challenge for a 401, per RFC 6750. */
export function bearerChallenge(realm: string, hadToken: boolean): string {
  return `Bearer realm="${realm}"${hadToken ? ', error="invalid_token"' : ''}`;
}

/**
 * Authentication for the HTTP doors from the `auth:` config, sharing the controller's authorizer.
 * `reviews` should be the client for TokenReviews alone (runtime.ts builds it with auth.reviewClient):
 * what strangers can cause never waits in the queue of Lease renewals and promotion steps.
 */
export function httpAuthFrom(
  reviews: KubeRest,
  cfg: Pick<AuthConfig, 'staticTokensFile' | 'tokenReview' | 'tokenAudiences'> &
    Partial<Pick<AuthConfig, 'jwt' | 'perSource' | 'tokenReviews' | 'tokenCache' | 'refusalLog' | 'agents'>>,
  authorizer: Pick<Authorizer, 'check'>,
  /** Discovery/JWKS fetches of auth.jwt issuers go through this guard (default: the process one). */
  o: { egress?: Egress; log?: Logger } = {},
): HttpAuthDeps {
  const perSource = cfg.perSource ?? FLOOD_DEFAULTS.perSource;
  const cache = cfg.tokenCache ?? FLOOD_DEFAULTS.tokenCache;
  const refusalLog = cfg.refusalLog ?? FLOOD_DEFAULTS.refusalLog;
  return {
    authenticator: new Authenticator({
      control: reviews,
      staticTokens: cfg.staticTokensFile ? loadStaticTokens(cfg.staticTokensFile) : [],
      ...(cfg.jwt?.length
        ? { jwt: new JwtAuthenticator(cfg.jwt, { egress: o.egress ?? defaultEgress(), log: o.log }) }
        : {}),
      tokenReview: cfg.tokenReview,
      audiences: cfg.tokenAudiences,
      cacheMs: cache.ttlSeconds * 1000,
      refusedCacheMs: cache.refusedTtlSeconds * 1000,
      cacheSize: cache.size,
      budget: cfg.tokenReviews ?? FLOOD_DEFAULTS.tokenReviews,
    }),
    authorizer,
    ...(cfg.agents ? { agents: cfg.agents } : {}),
    perSource: new KeyedRateLimiter({ qps: perSource.qps, burst: perSource.burst }),
    refusals: new SampledLog(o.log, {
      lines: refusalLog.lines,
      intervalMs: refusalLog.intervalSeconds * 1000,
      what: 'requests refused before authentication',
    }),
  };
}
