import { getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/server';
import type { Request, Response } from 'express';
import type { McpConfig } from './config.js';

// OAuth 2.0 resource-server discovery for the MCP endpoint (RFC 9728, as the MCP authorization
// spec asks of servers): a Protected Resource Metadata document naming the authorization servers
// whose tokens this server accepts, and `resource_metadata` in every 401 challenge so a client
// that gets no token in can find one. The tokens themselves are validated by the controller's
// authenticator (static tokens, JWTs of the `auth.jwt` issuers, TokenReview); loadConfig adds every
// `auth.jwt` issuer to authorizationServers, so the document names them.

/** Discovery is on when at least one authorization server is configured. */
export const oauthEnabled = (cfg: McpConfig) => cfg.oauth.authorizationServers.length > 0;

/** The endpoint's resource identifier: configured, else from the (validated) Host of the request. */
export function resourceUrl(cfg: McpConfig, host: string | undefined): string {
  return cfg.oauth.resource ?? `http://${host ?? `${cfg.host}:${cfg.port}`}${cfg.path}`;
}

/** The path-aware location of the document for a resource URL (RFC 9728 §3.1), as the SDK builds it. */
const metadataPath = (resource: string) => new URL(getOAuthProtectedResourceMetadataUrl(new URL(resource))).pathname;

/** The paths the document is served at: the path-aware one, and the root one for clients that probe it. */
export function metadataPaths(cfg: McpConfig): string[] {
  const fromConfig = cfg.oauth.resource ? [metadataPath(cfg.oauth.resource)] : [];
  return [
    ...new Set(['/.well-known/oauth-protected-resource', metadataPath(`http://localhost${cfg.path}`), ...fromConfig]),
  ];
}

export function protectedResourceMetadata(cfg: McpConfig, host: string | undefined): Record<string, unknown> {
  return {
    resource: resourceUrl(cfg, host),
    authorization_servers: cfg.oauth.authorizationServers,
    bearer_methods_supported: ['header'],
    ...(cfg.oauth.scopesSupported ? { scopes_supported: cfg.oauth.scopesSupported } : {}),
    resource_name: cfg.oauth.resourceName,
    ...(cfg.oauth.resourceDocumentation ? { resource_documentation: cfg.oauth.resourceDocumentation } : {}),
  };
}

/** GET/HEAD/OPTIONS of the metadata document; public, so any origin may read it. */
export function serveMetadata(cfg: McpConfig) {
  return (req: Request, res: Response) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, OPTIONS');
      const h = req.headers['access-control-request-headers'];
      if (h) {
        res.setHeader('Access-Control-Allow-Headers', h);
        res.setHeader('Vary', 'Access-Control-Request-Headers');
      }
      res.status(204).end();
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD, OPTIONS');
      res.status(405).json({ error: 'method_not_allowed', error_description: `${req.method} is not allowed here` });
      return;
    }
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.json(protectedResourceMetadata(cfg, req.headers.host));
  };
}

/** `, resource_metadata="…"` for a Bearer challenge, when discovery is on. */
export function challengeSuffix(cfg: McpConfig, host: string | undefined): string {
  const url = getOAuthProtectedResourceMetadataUrl(new URL(resourceUrl(cfg, host)));
  return oauthEnabled(cfg) ? `, resource_metadata="${url}"` : '';
}
