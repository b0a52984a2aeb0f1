export { AuthError, Authenticator, loadStaticTokens } from './authenticator.js';
export { type AccessRequest, Authorizer, type UrlAccessRequest } from './authorizer.js';
export {
  AUTH_DEFAULTS,
  type AuthConfig,
  AuthConfigSchema,
  FLOOD_DEFAULTS,
  type JwtAuthenticatorConfig,
  JwtAuthenticatorSchema,
} from './config.js';
export { authenticateHttp, bearerChallenge, type HttpAuthDeps, HttpAuthFailure, httpAuthFrom } from './httpAuth.js';
export {
  type Caller,
  IMPERSONATE_GROUPS_HEADER,
  IMPERSONATE_USER_HEADER,
  ImpersonationError,
  impersonate,
  impersonationRequest,
} from './identity.js';
export { localCaller } from './localIdentity.js';
export { IssuerUnavailable, JwtAuthenticator } from './oidc.js';
