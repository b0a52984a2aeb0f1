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
  })
  .strict();

export type McpConfig = z.infer<typeof McpConfigSchema>;
export const MCP_DEFAULTS: McpConfig = McpConfigSchema.parse({});
