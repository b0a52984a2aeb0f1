import { z } from 'zod';
import { AgentsConfigSchema } from './agents.js';

const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')]);
const intFrom = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const httpsUrl = (what: string) =>
  z
    .url({ protocol: /^https$/, error: `${what} must be an https:// URL` })
    .refine((u) => !new URL(u).username && !new URL(u).password, `${what} must not carry credentials`)
    .refine((u) => !new URL(u).hash, `${what} must not have a #fragment`);

// `system:` names belong to Kubernetes (system:masters, system:serviceaccount:…); a prefix that
// starts with it would make every mapped identity one of them.
const Prefix = z
  .string()
  .refine((p) => !p.startsWith('system:'), 'must not start with "system:" (reserved for Kubernetes identities)');

/**
 * One trusted JWT issuer, shaped like an entry of kube-apiserver's AuthenticationConfiguration `jwt:`
 * list (a subset: no CEL expressions, no extra/uid mappings), so an existing entry can be reused.
 */
export const JwtAuthenticatorSchema = z
  .object({
    issuer: z
      .object({
        /** Must equal the token's `iss` exactly. */
        url: httpsUrl('issuer.url').refine((u) => !new URL(u).search, 'issuer.url must not have a ?query'),
        /** Where the discovery document is (its `issuer` must still equal url); default `{url}/.well-known/openid-configuration`. */
        discoveryURL: httpsUrl('issuer.discoveryURL').optional(),
        /** kpromo extension: the JWKS URL, skipping discovery (for issuers without a discovery document). */
        jwksURI: httpsUrl('issuer.jwksURI').optional(),
        /** PEM CA bundle for discovery/JWKS TLS, inline (as in kube) or a path to a mounted file; default system roots. */
        certificateAuthority: z.string().min(1).optional(),
        /** The token's `aud` must contain at least one of these. */
        audiences: z.array(z.string().min(1)).min(1, 'at least one audience (never any token of the issuer)'),
        audienceMatchPolicy: z.literal('MatchAny').optional(),
      })
      .strict(),
    /** Each claim must be a string equal to requiredValue (kube's `claim`/`requiredValue` rules; no CEL). */
    claimValidationRules: z
      .array(z.object({ claim: z.string().min(1), requiredValue: z.string() }).strict())
      .default([]),
    claimMappings: z
      .object({
        username: z
          .object({
            claim: z.string().min(1),
            /** Default as kube's --oidc-username-prefix: none for `email`, else `{issuer.url}#`. */
            prefix: Prefix.optional(),
          })
          .strict(),
        /** A string or list-of-strings claim; absent: the caller has no groups but system:authenticated. */
        groups: z
          .object({
            claim: z.string().min(1),
            /**
             * Put before every group. Default `{issuer.url}#` (like the username's), so an issuer's
             * `admins` never becomes a Kubernetes group `admins` that RBAC binds for someone else;
             * `""` (no prefix) must be written out, as kube's AuthenticationConfiguration requires.
             */
            prefix: Prefix.optional(),
          })
          .strict()
          .optional(),
      })
      .strict(),
  })
  .strict();

export type JwtAuthenticatorConfig = z.infer<typeof JwtAuthenticatorSchema>;

/** `auth:` section: how callers of the HTTP API and the MCP server prove who they are. */
export const AuthConfigSchema = z
  .object({
    /** YAML/JSON file (e.g. a mounted Secret): `tokens: [{token, username, groups}]` for service principals. */
    staticTokensFile: z.string().min(1).optional(),
    /**
     * JWTs from these issuers (OIDC providers, another cluster's service-account issuer) are verified
     * here (signature via the issuer's JWKS, iss, aud, exp/nbf) and mapped to a Kubernetes user.
     */
    jwt: z
      .array(JwtAuthenticatorSchema)
      .superRefine((list, ctx) => {
        const seen = new Set<string>();
        list.forEach((j, i) => {
          if (seen.has(j.issuer.url))
            ctx.addIssue({ code: 'custom', path: [i, 'issuer', 'url'], message: 'issuer.url must be unique' });
          seen.add(j.issuer.url);
        });
      })
      .optional(),
    /**
     * Identities that are agents (docs/agents.md, "Agents as principals"): an agent may do alone only
     * what an AgentPolicy of the namespace allows (nothing but reading without one). A JWT carrying
     * an RFC 8693 `act` claim is an agent acting for `sub`, listed here or not.
     */
    agents: AgentsConfigSchema.optional(),
    /** Validate other bearer tokens with TokenReview against the control cluster. */
    tokenReview: bool.default(true),
    /**
     * Audiences a Kubernetes token must carry. A token minted for the apiserver (its default audience)
     * is not accepted: mint one with `kubectl create token <sa> --audience kpromo`.
     */
    tokenAudiences: z.array(z.string().min(1)).min(1, 'at least one audience (never any token)').default(['kpromo']),
    /** Serve /metrics without authentication (for scrapers that cannot send a token). */
    anonymousMetrics: bool.default(false),
    /**
     * Per client address (IPv6: its /64), a token bucket for requests whose bearer token is not
     * already known to be valid (none, unknown, refused): beyond it 429 with Retry-After, before any
     * work. Known tokens (static, or valid within the cache) never count. qps 0: off.
     */
    perSource: z
      .object({ qps: intFrom(0, 100_000).default(10), burst: intFrom(1, 100_000).default(40) })
      .strict()
      .optional(),
    /**
     * The budget of TokenReviews (unknown tokens): at most maxInFlight at once, maxQueued waiting
     * at most maxWaitMs for a slot; beyond, 503 with Retry-After at once.
     */
    tokenReviews: z
      .object({
        maxInFlight: intFrom(1, 1_000).default(4),
        maxQueued: intFrom(0, 100_000).default(32),
        maxWaitMs: intFrom(0, 60_000).default(2_000),
      })
      .strict()
      .optional(),
    /**
     * TokenReviews and SubjectAccessReviews go through their own client with this client-side rate
     * limit, never the one Lease renewals and promotion steps use (kubeClient). qps 0: off.
     */
    reviewClient: z
      .object({ qps: intFrom(0, 10_000).default(50), burst: intFrom(1, 10_000).default(100) })
      .strict()
      .optional(),
    /**
     * Valid tokens are remembered for ttlSeconds (TokenReview answers; JWTs at most until `exp`);
     * refused ones, keyed by their sha256, for refusedTtlSeconds; each at most `size` entries.
     */
    tokenCache: z
      .object({
        ttlSeconds: intFrom(0, 3_600).default(30),
        refusedTtlSeconds: intFrom(0, 3_600).default(10),
        size: intFrom(0, 1_000_000).default(10_000),
      })
      .strict()
      .optional(),
    /** Refused requests are logged: the first `lines` per interval, then one summary line per interval. */
    refusalLog: z
      .object({ lines: intFrom(0, 10_000).default(10), intervalSeconds: intFrom(1, 3_600).default(10) })
      .strict()
      .optional(),
  })
  .strict();

export type AuthConfig = z.infer<typeof AuthConfigSchema>;

/**
 * Defaults of the flood budgets (perSource, tokenReviews, reviewClient, tokenCache, refusalLog):
 * applied where they are used, so that an `auth:` section without them stays as written.
 */
export const FLOOD_DEFAULTS = {
  perSource: { qps: 10, burst: 40 },
  tokenReviews: { maxInFlight: 4, maxQueued: 32, maxWaitMs: 2_000 },
  reviewClient: { qps: 50, burst: 100 },
  tokenCache: { ttlSeconds: 30, refusedTtlSeconds: 10, size: 10_000 },
  refusalLog: { lines: 10, intervalSeconds: 10 },
} as const satisfies Required<
  Pick<AuthConfig, 'perSource' | 'tokenReviews' | 'reviewClient' | 'tokenCache' | 'refusalLog'>
>;
export const AUTH_DEFAULTS: AuthConfig = AuthConfigSchema.parse({});
