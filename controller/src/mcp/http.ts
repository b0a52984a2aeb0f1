import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { ApiContext } from '../api/context.js';
import type { KubeRest } from '../kube/rest.js';
import type { Logger } from '../observability/logger.js';
import {
  AuthError,
  Authenticator,
  Authorizer,
  type Caller,
  ImpersonationError,
  impersonate,
  impersonationRequest,
  loadStaticTokens,
} from './auth.js';
import type { McpConfig } from './config.js';
import { createMcpServer } from './server.js';

export interface McpHttpDeps {
  control: KubeRest;
  log: Logger;
  authenticator?: Pick<Authenticator, 'authenticate'>;
  authorizer?: Pick<Authorizer, 'check'>;
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
  const authenticator =
    deps.authenticator ??
    new Authenticator({
      control: deps.control,
      staticTokens: cfg.staticTokensFile ? loadStaticTokens(cfg.staticTokensFile) : [],
      tokenReview: cfg.tokenReview,
      audiences: cfg.tokenAudiences,
    });
  const authorizer = deps.authorizer ?? new Authorizer(deps.control);
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

  // 2. Bearer authentication.
  app.use(cfg.path, async (req: AuthedRequest, res: Response, next: NextFunction) => {
    const h = req.headers.authorization;
    const m = h ? /^Bearer\s+(\S+)\s*$/i.exec(h) : null;
    const deny = (why: string) => {
      res.setHeader('WWW-Authenticate', `Bearer realm="kpromo-mcp"${h ? ', error="invalid_token"' : ''}`);
      rpcError(res, 401, why);
    };
    if (!m) return deny('missing bearer token (Authorization: Bearer <token>)');
    let authenticated: Caller | undefined;
    try {
      authenticated = await authenticator.authenticate(m[1]);
      // 3. Impersonation (x-kpromo-user, x-kpromo-groups): only with RBAC `impersonate` on the user/groups.
      const imp = impersonationRequest(req.headers);
      const caller = imp ? await impersonate(authorizer, authenticated, imp) : authenticated;
      req.caller = caller;
      req.auth = { token: m[1], clientId: authenticated.username, scopes: [], extra: { caller } };
      next();
    } catch (e) {
      if (e instanceof AuthError) return deny(e.message);
      if (e instanceof ImpersonationError) {
        log.warn(
          {
            audit: true,
            user: authenticated?.username,
            authSource: authenticated?.source,
            impersonate: req.headers['x-kpromo-user'],
            impersonateGroups: req.headers['x-kpromo-groups'],
            result: 'refused',
            message: e.message,
          },
          'mcp impersonation refused',
        );
        return rpcError(res, 403, e.message);
      }
      log.error({ err: (e as Error).message }, 'token validation failed');
      rpcError(res, 503, 'token validation unavailable, retry later', -32603);
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
      if (sessions.size >= cfg.maxSessions) return rpcError(res, 503, 'too many MCP sessions, retry later');
      const caller = req.caller!;
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
