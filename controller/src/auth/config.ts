import { z } from 'zod';

const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')]);

/** `auth:` section: how callers of the HTTP API and the MCP server prove who they are. */
export const AuthConfigSchema = z
  .object({
    /** YAML/JSON file (e.g. a mounted Secret): `tokens: [{token, username, groups}]` for service principals. */
    staticTokensFile: z.string().min(1).optional(),
    /** Validate other bearer tokens with TokenReview against the control cluster. */
    tokenReview: bool.default(true),
    /**
     * Audiences a Kubernetes token must carry. A token minted for the apiserver (its default audience)
     * is not accepted: mint one with `kubectl create token <sa> --audience kpromo`.
     */
    tokenAudiences: z.array(z.string().min(1)).min(1, 'at least one audience (never any token)').default(['kpromo']),
    /** Serve /metrics without authentication (for scrapers that cannot send a token). */
    anonymousMetrics: bool.default(false),
  })
  .strict();

export type AuthConfig = z.infer<typeof AuthConfigSchema>;
export const AUTH_DEFAULTS: AuthConfig = AuthConfigSchema.parse({});
