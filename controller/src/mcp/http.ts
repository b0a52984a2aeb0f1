import type { Server } from 'node:http';
import { toWebRequest } from '@modelcontextprotocol/node';
import { isLegacyRequest } from '@modelcontextprotocol/server';
import express, { type Express, type Response } from 'express';
import type { ApiContext } from '../api/context.js';
import type { HttpAuthDeps } from '../auth/httpAuth.js';
import type { Caller } from '../auth/identity.js';
import type { Logger } from '../observability/logger.js';
import type { McpConfig } from './config.js';
import type { McpServerOptions } from './guard.js';
import { type AllowedPeers, allowedPeers, bodyAndAuth, hostGuard, originGuard } from './httpGate.js';
import { type AuthedRequest, identityOf, idOf, rpcError } from './httpRpc.js';
import { LegacySessions } from './legacySessions.js';
import { metadataPaths, oauthEnabled, serveMetadata } from './oauth.js';
import { makeRoom } from './sessionBudget.js';
import { StatelessEndpoint } from './statelessEndpoint.js';

export interface McpHttpDeps {
  log: Logger;
  /** The controller's shared authentication (bearer tokens, impersonation) and authorizer. */
  auth: HttpAuthDeps;
}

export interface McpHttp {
  server: Server;
  port: number;
  url: string;
  /** Open 2025-era sessions. */
  sessions(): number;
  /** Open 2026-07-28 subscriptions/listen streams. */
  streams(): number;
  close(): Promise<void>;
}

/**
 * MCP over Streamable HTTP on its own listener. Every request: Host/Origin validation (DNS
 * rebinding), bearer authentication (static tokens, TokenReview) and impersonation of x-kpromo-user
 * when RBAC lets the caller impersonate that user; every call is then authorised as that caller
 * inside the tools (SubjectAccessReview).
 *
 * Protocol 2026-07-28 is served statelessly (a fresh McpServer per request, server/discover,
 * per-request _meta, Mcp-Method/Mcp-Name validation, cache hints, subscriptions/listen streams);
 * 2025-era clients keep their sessions (Mcp-Session-Id), one McpServer per session bound to the
 * user (and proxy) that opened it, with fair per-caller budgets shared with listen streams.
 */
export async function startMcpHttp(ctx: ApiContext, cfg: McpConfig, deps: McpHttpDeps): Promise<McpHttp> {
  const log = deps.log.child({ component: 'mcp' });
  const serverOpts: McpServerOptions = { write: cfg.write, log };
  // Filled in once the listener has its port (the default hosts name it); no request comes before.
  const allowed: AllowedPeers = { hosts: [], origins: [] };
  // One budget over sessions and listen streams alike, sessions first. Both exist before the first
  // request asks for room.
  const room = (caller: Caller) => makeRoom([sessions, modern], identityOf(caller), cfg);
  const sessions = new LegacySessions(ctx, cfg, { log, serverOpts, allowed, makeRoom: room });
  const modern = new StatelessEndpoint(ctx, cfg, { log, serverOpts, makeRoom: room });

  const app = express();
  app.disable('x-powered-by');
  // 1. DNS-rebinding protection before anything else (also for unauthenticated requests): the
  //    Host everywhere, the Origin on the MCP endpoint (the metadata document is public).
  app.use(hostGuard(allowed));
  app.use(cfg.path, originGuard(allowed));
  // 2. OAuth protected-resource metadata (RFC 9728), when authorization servers are configured.
  if (oauthEnabled(cfg)) app.all(metadataPaths(cfg), serveMetadata(cfg));
  // 3. The flood gate before the body, 4. bearer authentication and impersonation (see bodyAndAuth).
  app.use(cfg.path, ...bodyAndAuth(cfg, deps.auth, log));
  app.all(cfg.path, byEra(sessions, modern, log));

  const { server, port } = await listen(app, cfg);
  Object.assign(allowed, allowedPeers(cfg, port));
  const sweep = setInterval(() => sessions.closeIdle(), 30_000);
  sweep.unref();

  const displayHost = cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host === '0.0.0.0' ? '127.0.0.1' : cfg.host;
  log.info(
    { host: cfg.host, port, path: cfg.path, write: cfg.write, oauth: oauthEnabled(cfg) },
    'mcp server listening (2026-07-28 stateless, 2025 sessions)',
  );
  return {
    server,
    port,
    url: `http://${displayHost}:${port}${cfg.path}`,
    sessions: () => sessions.size,
    streams: () => modern.size,
    async close() {
      clearInterval(sweep);
      await modern.close();
      await sessions.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The MCP endpoint: a 2026-07-28 POST to the stateless endpoint, everything else to the 2025 sessions. */
function byEra(sessions: LegacySessions, modern: StatelessEndpoint, log: Logger) {
  return async (req: AuthedRequest, res: Response) => {
    try {
      const method = req.method.toUpperCase();
      // A POST whose body express could not read as JSON has no envelope claim: the 2025 path
      // answers it (415 and friends) exactly as before.
      const legacy =
        method !== 'POST' || req.body === undefined
          ? true
          : await isLegacyRequest(await toWebRequest(req, req.body), req.body);
      if (!legacy) return await modern.post(req, res);
      if (method === 'POST') return await sessions.post(req, res);
      if (method === 'GET' || method === 'DELETE') return await sessions.resume(req, res);
      res.setHeader('Allow', 'GET, POST, DELETE');
      rpcError(res, 405, 'Method not allowed.');
    } catch (e) {
      log.error({ err: (e as Error).message }, 'mcp request failed');
      if (!res.headersSent) rpcError(res, 500, 'internal server error', -32603, idOf(req.body));
    }
  };
}

async function listen(app: Express, cfg: McpConfig): Promise<{ server: Server; port: number }> {
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(cfg.port, cfg.host, (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const addr = server.address();
  return { server, port: typeof addr === 'object' && addr ? addr.port : cfg.port };
}
