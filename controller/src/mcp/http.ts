import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { ApiContext } from '../api/context.js';
import { authenticateHttp, bearerChallenge, type HttpAuthDeps, HttpAuthFailure } from '../auth/httpAuth.js';
import type { Caller } from '../auth/identity.js';
import type { Logger } from '../observability/logger.js';
import type { McpConfig } from './config.js';
import { createMcpServer } from './server.js';
import { sessionToEvict } from './sessionBudget.js';

export interface McpHttpDeps {
  log: Logger;
  /** The controller's shared authentication (bearer tokens, impersonation) and authorizer. */
  auth: HttpAuthDeps;
}

export interface McpHttp {
  server: Server;
  port: number;
  url: string;
  sessions(): number;
  close(): Promise<void>;
}

interface Session {
  transport: StreamableHTTPServerTransport;
  mcp: McpServer;
  /** Who opened it: the user, and the proxy when it was opened through impersonation. */
  identity: string;
  lastSeen: number;
}

type AuthedRequest = Request & { auth?: AuthInfo; caller?: Caller };

const identityOf = (c: Caller) => JSON.stringify([c.username, c.via?.username ?? null]);

const rpcError = (res: Response, status: number, message: string, code = -32000) => {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
};

/**
 * MCP over Streamable HTTP on its own listener: Host/Origin validation (DNS rebinding), bearer
 * authentication (static tokens, TokenReview), impersonation of x-kpromo-user when RBAC lets the
 * caller impersonate that user, one McpServer per session bound to the user (and proxy) that
 * opened it. Authorisation happens per call inside the tools (SubjectAccessReview).
 */
export async function startMcpHttp(ctx: ApiContext, cfg: McpConfig, deps: McpHttpDeps): Promise<McpHttp> {
  const log = deps.log.child({ component: 'mcp' });
  const authorizer = deps.auth.authorizer;
  const sessions = new Map<string, Session>();
  let allowedHosts: string[] = [];
  let allowedOrigins: string[] = [];

  const app = express();
  app.disable('x-powered-by');

  // 1. DNS-rebinding protection before anything else (also for unauthenticated requests).
  app.use(cfg.path, (req: Request, res: Response, next: NextFunction) => {
    const host = req.headers.host;
    if (!host || !allowedHosts.includes(host.toLowerCase()))
      return rpcError(res, 403, `Invalid Host header: ${host ?? '(none)'}`);
    const origin = req.headers.origin;
    if (origin !== undefined && !allowedOrigins.includes(origin.toLowerCase()))
      return rpcError(res, 403, `Invalid Origin header: ${origin}`);
    next();
  });

  // 2. Bearer authentication and impersonation, shared with the JSON API.
  app.use(cfg.path, async (req: AuthedRequest, res: Response, next: NextFunction) => {
    try {
      const caller = await authenticateHttp(deps.auth, req.headers);
      req.caller = caller;
      req.auth = { token: '', clientId: (caller.via ?? caller).username, scopes: [], extra: { caller } };
      next();
    } catch (e) {
      if (!(e instanceof HttpAuthFailure)) return next(e);
      if (e.status === 401)
        res.setHeader('WWW-Authenticate', bearerChallenge('kpromo-mcp', !!req.headers.authorization));
      if (e.status === 403)
        log.warn(
          {
            audit: true,
            user: e.authenticated?.username,
            authSource: e.authenticated?.source,
            impersonate: req.headers['x-kpromo-user'],
            impersonateGroups: req.headers['x-kpromo-groups'],
            result: 'refused',
            message: e.message,
          },
          'mcp impersonation refused',
        );
      if (e.status === 503) log.error({ err: e.message }, 'token validation failed');
      rpcError(res, e.status, e.message, e.status === 503 ? -32603 : -32000);
    }
  });

  app.use(cfg.path, express.json({ limit: '1mb' }));

  const sessionFor = (req: AuthedRequest, res: Response): Session | undefined => {
    const id = req.headers['mcp-session-id'];
    if (typeof id !== 'string' || !id) {
      rpcError(res, 400, 'Bad Request: missing mcp-session-id header');
      return undefined;
    }
    const s = sessions.get(id);
    if (!s) {
      rpcError(res, 404, 'Session not found', -32001);
      return undefined;
    }
    if (!req.caller || s.identity !== identityOf(req.caller)) {
      rpcError(res, 403, 'this session belongs to another user');
      return undefined;
    }
    s.lastSeen = Date.now();
    return s;
  };

  app.post(cfg.path, async (req: AuthedRequest, res: Response) => {
    try {
      if (req.headers['mcp-session-id'] !== undefined) {
        const s = sessionFor(req, res);
        if (s) await s.transport.handleRequest(req, res, req.body);
        return;
      }
      if (!isInitializeRequest(req.body))
        return rpcError(res, 400, 'Bad Request: no mcp-session-id header and not an initialize request');
      const caller = req.caller!;
      // Fair eviction instead of refusing: see sessionToEvict.
      const evict = sessionToEvict(
        [...sessions].map(([id, s]) => ({ id, identity: s.identity, lastSeen: s.lastSeen })),
        identityOf(caller),
        cfg,
      );
      if (evict) {
        const old = sessions.get(evict)!;
        sessions.delete(evict);
        void old.transport.close().catch(() => undefined);
        void old.mcp.close().catch(() => undefined);
        log.info({ session: evict, identity: old.identity }, 'mcp session evicted (session budget)');
      }
      const mcp = createMcpServer(ctx, { write: cfg.write, authorizer, log });
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableDnsRebindingProtection: true,
        allowedHosts,
        allowedOrigins,
        onsessioninitialized: (id) => {
          sessions.set(id, { transport, mcp, identity: identityOf(caller), lastSeen: Date.now() });
          log.info(
            { session: id, user: caller.username, ...(caller.via ? { via: caller.via.username } : {}) },
            'mcp session opened',
          );
        },
        onsessionclosed: (id) => {
          sessions.delete(id);
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await mcp.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch (e) {
      log.error({ err: (e as Error).message }, 'mcp request failed');
      if (!res.headersSent) rpcError(res, 500, 'internal server error', -32603);
    }
  });
  const streamOrDelete = async (req: AuthedRequest, res: Response) => {
    try {
      const s = sessionFor(req, res);
      if (s) await s.transport.handleRequest(req, res);
    } catch (e) {
      log.error({ err: (e as Error).message }, 'mcp request failed');
      if (!res.headersSent) rpcError(res, 500, 'internal server error', -32603);
    }
  };
  app.get(cfg.path, streamOrDelete);
  app.delete(cfg.path, streamOrDelete);

  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(cfg.port, cfg.host, (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : cfg.port;
  allowedHosts.push(
    ...(cfg.allowedHosts.length
      ? cfg.allowedHosts
      : [`${cfg.host}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]
    ).map((h) => h.toLowerCase()),
  );
  allowedHosts = [...new Set(allowedHosts)];
  allowedOrigins = [
    ...new Set([
      ...cfg.allowedOrigins.map((o) => o.toLowerCase()),
      ...allowedHosts.flatMap((h) => [`http://${h}`, `https://${h}`]),
    ]),
  ];

  const sweep = setInterval(() => {
    const cutoff = Date.now() - cfg.sessionIdleSeconds * 1000;
    for (const [id, s] of sessions)
      if (s.lastSeen < cutoff) {
        sessions.delete(id);
        void s.transport.close().catch(() => undefined);
        void s.mcp.close().catch(() => undefined);
      }
  }, 30_000);
  sweep.unref();

  const displayHost = cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host === '0.0.0.0' ? '127.0.0.1' : cfg.host;
  log.info({ host: cfg.host, port, path: cfg.path, write: cfg.write }, 'mcp server listening');
  return {
    server,
    port,
    url: `http://${displayHost}:${port}${cfg.path}`,
    sessions: () => sessions.size,
    async close() {
      clearInterval(sweep);
      for (const s of sessions.values()) {
        await s.transport.close().catch(() => undefined);
        await s.mcp.close().catch(() => undefined);
      }
      sessions.clear();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
