import type { JwtAuthenticatorConfig } from './config.js';
import type { Caller } from './identity.js';

// Pure decisions on a JWT's payload once its signature, iss, aud and times have been verified:
// the claim rules, and the mapping to a Kubernetes user, with kube-apiserver's semantics.

/** Signature algorithms accepted: the asymmetric ones kube-apiserver accepts (never none, never HS*). */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512'];

const MAX_TOKEN_LENGTH = 16 * 1024;
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * The unverified `iss` of a compact JWS, or undefined when the token is not one. Only used to pick
 * the issuer whose keys must then verify the token; nothing else is read before verification.
 */
export function peekIssuer(token: string): string | undefined {
  if (token.length > MAX_TOKEN_LENGTH || !JWS_COMPACT.test(token)) return undefined;
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as unknown;
    const iss = payload && typeof payload === 'object' ? (payload as { iss?: unknown }).iss : undefined;
    return typeof iss === 'string' ? iss : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The `exp` of a compact JWS (ms since the epoch), or undefined. Only read once the token has been
 * verified (signature, exp required), to remember it no longer than it is valid.
 */
export function peekExpiry(token: string): number | undefined {
  if (token.length > MAX_TOKEN_LENGTH || !JWS_COMPACT.test(token)) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** Like --oidc-username-prefix: none for `email` (already global), `{issuer}#` for anything else. */
export function usernamePrefix(cfg: JwtAuthenticatorConfig): string {
  const u = cfg.claimMappings.username;
  return u.prefix ?? (u.claim === 'email' ? '' : `${cfg.issuer.url}#`);
}

/**
 * Put before each group: the configured prefix, else `{issuer}#` like the username's. Never empty by
 * default: an issuer's `admins` must not become the Kubernetes group `admins`, bound for others.
 */
export function groupsPrefix(cfg: JwtAuthenticatorConfig): string {
  return cfg.claimMappings.groups?.prefix ?? `${cfg.issuer.url}#`;
}

export type ClaimsVerdict = { ok: true; caller: Caller } | { ok: false; reason: string };

const isReserved = (name: string) => name.startsWith('system:');

/** Verified claims -> Caller, or why the token is refused (for the debug log, never the client). */
export function callerFromClaims(cfg: JwtAuthenticatorConfig, claims: Record<string, unknown>): ClaimsVerdict {
  for (const r of cfg.claimValidationRules) {
    const v = claims[r.claim];
    if (typeof v !== 'string' || v !== r.requiredValue)
      return { ok: false, reason: `claim ${r.claim} must be ${JSON.stringify(r.requiredValue)}` };
  }
  const um = cfg.claimMappings.username;
  const raw = claims[um.claim];
  if (typeof raw !== 'string' || raw === '')
    return { ok: false, reason: `username claim ${um.claim} is missing, empty or not a string` };
  // As kube does for the email claim: an address the issuer says is unverified names nobody.
  if (um.claim === 'email' && 'email_verified' in claims && claims.email_verified !== true)
    return { ok: false, reason: 'email_verified is not true' };
  const username = `${usernamePrefix(cfg)}${raw}`;
  if (isReserved(username))
    return { ok: false, reason: `username ${username} would use the reserved system: prefix; set a username prefix` };
  const gm = cfg.claimMappings.groups;
  const groupClaim = gm ? claims[gm.claim] : undefined;
  let groups: string[] = [];
  if (gm && groupClaim !== undefined && groupClaim !== null) {
    const list = typeof groupClaim === 'string' ? [groupClaim] : groupClaim;
    if (!Array.isArray(list) || list.some((g) => typeof g !== 'string'))
      return { ok: false, reason: `groups claim ${gm.claim} is neither a string nor a list of strings` };
    const prefix = groupsPrefix(cfg);
    groups = (list as string[]).filter(Boolean).map((g) => `${prefix}${g}`);
    const reserved = groups.find(isReserved);
    if (reserved)
      return { ok: false, reason: `group ${reserved} would use the reserved system: prefix; set a groups prefix` };
  }
  const actor = actorOf(cfg, claims);
  if (actor && !actor.ok) return actor;
  // Every authenticated user is in system:authenticated, as the apiserver's authenticators do.
  return {
    ok: true,
    caller: {
      username,
      groups: [...new Set([...groups, 'system:authenticated'])],
      source: 'oidc',
      ...(actor ? { agent: { name: actor.username, username: actor.username } } : {}),
    },
  };
}

/**
 * RFC 8693 delegation: `act.sub` is the party acting for `sub` (an agent acting for a person), named
 * with the username prefix (it is a subject of the same issuer). Only the current actor is read;
 * earlier actors in a nested `act` only say how the token got here. Undefined without `act`.
 */
function actorOf(
  cfg: JwtAuthenticatorConfig,
  claims: Record<string, unknown>,
): { ok: true; username: string } | { ok: false; reason: string } | undefined {
  if (claims.act === undefined) return undefined;
  const sub = claims.act && typeof claims.act === 'object' ? (claims.act as { sub?: unknown }).sub : undefined;
  if (typeof sub !== 'string' || sub === '') return { ok: false, reason: 'act claim has no sub (RFC 8693)' };
  const username = `${usernamePrefix(cfg)}${sub}`;
  if (isReserved(username))
    return { ok: false, reason: `act.sub ${username} would use the reserved system: prefix; set a username prefix` };
  return { ok: true, username };
}
