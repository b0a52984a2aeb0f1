import { z } from 'zod';

const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')]);

/** `mcp:` section of the controller config. */
export const McpConfigSchema = z
  .object({
    enabled: bool.default(false).describe('Serve MCP over Streamable HTTP from the controller process'),
    host: z.string().min(1).default('127.0.0.1'),
    port: z.coerce.number().int().min(0).max(65535).default(8090),
    path: z.string().startsWith('/').default('/mcp'),
    /** Host header values accepted (DNS-rebinding protection); default: the bind host and localhost with the port. */
    allowedHosts: z.array(z.string().min(1)).default([]),
    /** Origin header values accepted when a browser sends one; requests without Origin are accepted. */
    allowedOrigins: z.array(z.string().min(1)).default([]),
    /** Write mode: promote/rollback and plan creation. Read-only unless explicitly enabled. */
    write: bool.default(false),
    maxSessions: z.coerce.number().int().min(1).max(10_000).default(100),
    /** Sessions one caller (user, proxy) may hold; opening another closes its least recently used. */
    maxSessionsPerCaller: z.coerce.number().int().min(1).max(10_000).default(10),
    sessionIdleSeconds: z.coerce.number().int().min(10).max(86_400).default(1800),
    /**
     * OAuth 2.0 resource-server discovery (RFC 9728): the metadata document at
     * /.well-known/oauth-protected-resource<path> and `resource_metadata` in every 401 challenge, so
     * agents that discover authorization can find where to get a token. Tokens are still validated
     * by the controller's authenticator (static tokens, TokenReview for the `auth.tokenAudiences`).
     */
    oauth: z
      .object({
        /** Issuer URLs of the authorization servers whose tokens the authenticator accepts (e.g. the cluster's OIDC issuer). */
        authorizationServers: z.array(z.url({ protocol: /^https?$/ })).default([]),
        /** The MCP endpoint's public URL (the RFC 8707 resource identifier); default: from the request's validated Host and mcp.path. */
        resource: z.url({ protocol: /^https?$/ }).optional(),
        scopesSupported: z.array(z.string().min(1)).optional(),
        resourceName: z.string().min(1).default('kpromo'),
        resourceDocumentation: z.url().optional(),
      })
      .strict()
      .default({ authorizationServers: [], resourceName: 'kpromo' }),
  })
  .strict();

export type McpConfig = z.infer<typeof McpConfigSchema>;
export const MCP_DEFAULTS: McpConfig = McpConfigSchema.parse({});
