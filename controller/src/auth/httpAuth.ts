import type { IncomingHttpHeaders } from 'node:http';
import type { KubeRest } from '../kube/rest.js';
import { defaultEgress, type Egress } from '../net/guardedFetch.js';
import type { Logger } from '../observability/logger.js';
import { AuthError, Authenticator, loadStaticTokens } from './authenticator.js';
import type { Authorizer } from './authorizer.js';
import type { AuthConfig } from './config.js';
import { type Caller, ImpersonationError, impersonate, impersonationRequest } from './identity.js';
import { JwtAuthenticator } from './oidc.js';

export interface HttpAuthDeps {
  authenticator: Pick<Authenticator, 'authenticate'>;
  authorizer: Pick<Authorizer, 'check'>;
}

/** Why a request was not let in: 401 (who are you?), 403 (not as that user), 503 (cannot check now). */
export class HttpAuthFailure extends Error {
  constructor(
    readonly status: 401 | 403 | 503,
    message: string,
    /** The authenticated caller, when the refusal came after authentication (for the audit line). */
    readonly authenticated?: Caller,
  ) {
    super(message);
    this.name = 'HttpAuthFailure';
  }
}

/**
 * The one way an HTTP door (JSON API, MCP) learns its caller: a bearer token (static token, JWT of
 * a configured issuer, or TokenReview), then, if x-kpromo-user is present, impersonation that RBAC must allow
 * (`impersonate` on the user and each group), exactly like `kubectl --as`.
 */
export async function authenticateHttp(deps: HttpAuthDeps, headers: IncomingHttpHeaders): Promise<Caller> {
  const h = headers.authorization;
  const m = h ? /^Bearer\s+(\S+)\s*$/i.exec(h) : null;
  if (!m) throw new HttpAuthFailure(401, 'missing bearer token (Authorization: Bearer <token>)');
  let authenticated: Caller;
  try {
    authenticated = await deps.authenticator.authenticate(m[1]);
  } catch (e) {
    if (e instanceof AuthError) throw new HttpAuthFailure(401, e.message);
    throw new HttpAuthFailure(
      503,
      `token validation unavailable, retry later (${(e as Error).message.split('\n')[0]})`,
    );
  }
  try {
    const imp = impersonationRequest(headers);
    return imp ? await impersonate(deps.authorizer, authenticated, imp) : authenticated;
  } catch (e) {
    if (e instanceof ImpersonationError) throw new HttpAuthFailure(403, e.message, authenticated);
    throw new HttpAuthFailure(503, `authorization unavailable, retry later (${(e as Error).message.split('\n')[0]})`);
  }
}

/** `Bearer realm=…` challenge for a 401, per RFC 6750. */
export function bearerChallenge(realm: string, hadToken: boolean): string {
  return `Bearer realm="${realm}"${hadToken ? ', error="invalid_token"' : ''}`;
}

/** Authentication for the HTTP doors from the `auth:` config, sharing the controller's authorizer. */
export function httpAuthFrom(
  control: KubeRest,
  cfg: Pick<AuthConfig, 'staticTokensFile' | 'tokenReview' | 'tokenAudiences'> & Partial<Pick<AuthConfig, 'jwt'>>,
  authorizer: Pick<Authorizer, 'check'>,
  /** Discovery/JWKS fetches of auth.jwt issuers go through this guard (default: the process one). */
  o: { egress?: Egress; log?: Logger } = {},
): HttpAuthDeps {
  return {
    authenticator: new Authenticator({
      control,
      staticTokens: cfg.staticTokensFile ? loadStaticTokens(cfg.staticTokensFile) : [],
      ...(cfg.jwt?.length
        ? { jwt: new JwtAuthenticator(cfg.jwt, { egress: o.egress ?? defaultEgress(), log: o.log }) }
        : {}),
      tokenReview: cfg.tokenReview,
      audiences: cfg.tokenAudiences,
    }),
    authorizer,
  };
}
