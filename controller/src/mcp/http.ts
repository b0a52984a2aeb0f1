import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import {
  type AuthInfo,
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  type McpServer,
  type ServerEvent,
  type ServerEventBus,
} from '@modelcontextprotocol/server';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { ApiContext } from '../api/context.js';
import { authenticateHttp, floodGate, type HttpAuthDeps, HttpAuthFailure, refusalHeaders } from '../auth/httpAuth.js';
import type { Caller } from '../auth/identity.js';
import type { Logger } from '../observability/logger.js';
import { SampledLog } from '../observability/sampledLog.js';
import type { McpConfig } from './config.js';
import { SessionEventStore } from './eventStore.js';
import { changeFeed } from './feed.js';
import { authInfoFor, type McpServerOptions } from './guard.js';
import { challengeSuffix, metadataPaths, oauthEnabled, serveMetadata } from './oauth.js';
import { readableListen } from './resources.js';
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
  /** Open 2025-era sessions. */
  sessions(): number;
  /** Open 2026-07-28 subscriptions/listen streams. */
  streams(): number;
  close(): Promise<void>;
}

interface Session {
  transport: NodeStreamableHTTPServerTransport;
  mcp: McpServer;
  /** Who opened it: the user, and the proxy when it was opened through impersonation. */
  identity: string;
  lastSeen: number;
}

interface Stream {
  identity: string;
  lastSeen: number;
  res: Response;
}

type AuthedRequest = Request & { auth?: AuthInfo; caller?: Caller };

const identityOf = (c: Caller) => JSON.stringify([c.username, c.via?.username ?? null]);

type RpcId = string | number | null;

/** The JSON-RPC id of a single request body, for error answers; null when none can be read. */
function idOf(body: unknown): RpcId {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
  const { id, method } = body as { id?: unknown; method?: unknown };
  return typeof method === 'string' && (typeof id === 'string' || typeof id === 'number') ? id : null;
}

const rpcError = (res: Response, status: number, message: string, code = -32000, id: RpcId = null) => {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id });
};

/**
 * The event bus behind 2026-07-28 subscriptions/listen streams, scoped by caller: each stream's
 * listener is registered while its (authenticated) request is being served, so events about a
 * namespace reach only the streams whose caller may list there. Resource updates are published to
 * every stream; the URIs a stream may follow were filtered by RBAC when it was opened.
 */
class CallerScopedBus implements ServerEventBus {
  private readonly listeners = new Map<(e: ServerEvent) => void, Caller | undefined>();
  constructor(private readonly current: AsyncLocalStorage<Caller>) {}
  publish(event: ServerEvent): void {
    for (const l of [...this.listeners.keys()]) l(event);
  }
  /** Delivers to the streams whose caller passes `allowed` (a stream without a known caller gets nothing). */
  publishWhere(event: ServerEvent, allowed: (caller: Caller) => Promise<boolean>): void {
    for (const [l, caller] of [...this.listeners])
      if (caller)
        void allowed(caller)
          .then((ok) => ok && this.listeners.has(l) && l(event))
          .catch(() => undefined);
  }
  subscribe(listener: (e: ServerEvent) => void): () => void {
    this.listeners.set(listener, this.current.getStore());
    return () => void this.listeners.delete(listener);
  }
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
  const sessions = new Map<string, Session>();
  const streams = new Map<string, Stream>();
  let allowedHosts: string[] = [];
  let allowedOrigins: string[] = [];
  const feed = changeFeed(ctx);

  // ---- 2026-07-28: stateless, one server per request ----
  const currentCaller = new AsyncLocalStorage<Caller>();
  const bus = new CallerScopedBus(currentCaller);
  const modern = createMcpHandler(() => createMcpServer(ctx, serverOpts, { era: 'modern' }), {
    legacy: 'reject',
    bus,
    maxSubscriptions: cfg.maxSessions,
    onerror: (e) => log.debug({ err: e.message }, 'mcp request rejected'),
  });
  const serveModern = toNodeHandler(modern, {
    onerror: (e) => log.error({ err: e.message }, 'mcp request failed'),
  });
  // Resource URIs followed by open listen streams, with how many streams follow each.
  const followed = new Map<string, { n: number; release: () => void }>();
  const follow = (uri: string) => {
    const f = followed.get(uri);
    if (f) f.n++;
    else followed.set(uri, { n: 1, release: feed.onResource(uri, (u) => modern.notify.resourceUpdated(u)) });
    return () => {
      const g = followed.get(uri);
      if (g && --g.n === 0) {
        g.release();
        followed.delete(uri);
      }
    };
  };
  const stopListChanges = feed.onList((resource, namespace) =>
    bus.publishWhere({ kind: 'resources_list_changed' }, (caller) =>
      ctx.access.may(caller, { verb: 'list', resource, namespace }),
    ),
  );

  const closeSession = (id: string, why: string) => {
    const s = sessions.get(id);
    if (!s) return;
    sessions.delete(id);
    void s.transport.close().catch(() => undefined);
    void s.mcp.close().catch(() => undefined);
    log.info({ session: id, identity: s.identity }, `mcp session closed (${why})`);
  };
  /** Fair eviction instead of refusing (see sessionToEvict), over sessions and listen streams alike. */
  const makeRoom = (caller: Caller) => {
    const evict = sessionToEvict(
      [
        ...[...sessions].map(([id, s]) => ({ id: `s:${id}`, identity: s.identity, lastSeen: s.lastSeen })),
        ...[...streams].map(([id, s]) => ({ id: `l:${id}`, identity: s.identity, lastSeen: s.lastSeen })),
      ],
      identityOf(caller),
      cfg,
    );
    if (!evict) return;
    const id = evict.slice(2);
    if (evict.startsWith('s:')) closeSession(id, 'session budget');
    else {
      const st = streams.get(id);
      streams.delete(id);
      st?.res.destroy();
      log.info({ stream: id, identity: st?.identity }, 'mcp listen stream closed (session budget)');
    }
  };

  const app = express();
  app.disable('x-powered-by');

  // 1. DNS-rebinding protection before anything else (also for unauthenticated requests): the
  //    Host everywhere, the Origin on the MCP endpoint (the metadata document is public).
  app.use((req: Request, res: Response, next: NextFunction) => {
    const host = req.headers.host;
    if (!host || !allowedHosts.includes(host.toLowerCase()))
      return rpcError(res, 403, `Invalid Host header: ${host ?? '(none)'}`);
    next();
  });
  app.use(cfg.path, (req: Request, res: Response, next: NextFunction) => {
    const origin = req.headers.origin;
    if (origin !== undefined && !allowedOrigins.includes(origin.toLowerCase()))
      return rpcError(res, 403, `Invalid Origin header: ${origin}`);
    next();
  });

  // 2. OAuth protected-resource metadata (RFC 9728), when authorization servers are configured.
  if (oauthEnabled(cfg)) app.all(metadataPaths(cfg), serveMetadata(cfg));

  // 3. The body, so that every error answer can carry the request id — but not for an address that
  //    already sent too many unknown tokens: 429 before reading anything (the JSON-RPC id is null).
  const refusals =
    deps.auth.refusals ?? new SampledLog(log, { lines: 10, intervalMs: 10_000, what: 'requests refused' });
  const refuse = (req: AuthedRequest, res: Response, e: HttpAuthFailure) => {
    res.set(refusalHeaders(e, 'kpromo-mcp', !!req.headers.authorization));
    if (e.status === 401)
      res.setHeader(
        'WWW-Authenticate',
        `${res.getHeader('WWW-Authenticate')}${challengeSuffix(cfg, req.headers.host)}`,
      );
    rpcError(res, e.status, e.message, e.status === 503 ? -32603 : -32000, idOf(req.body));
  };
  app.use(cfg.path, (req: AuthedRequest, res: Response, next: NextFunction) => {
    const limited = floodGate(deps.auth, req.headers, req.socket.remoteAddress);
    if (!limited) return next();
    refusals.warn({ audit: true, status: 429, source: req.socket.remoteAddress, result: 'refused' }, limited.message);
    refuse(req, res, limited);
  });
  app.use(cfg.path, express.json({ limit: '1mb' }));
  app.use(
    cfg.path,
    (err: Error & { type?: string; status?: number }, _req: Request, res: Response, next: NextFunction) => {
      if (err.type === 'entity.too.large') return rpcError(res, 413, 'request body too large (limit 1mb)');
      if (err.type === 'entity.parse.failed')
        return rpcError(res, 400, 'Parse error: the request body is not valid JSON', -32700);
      next(err);
    },
  );

  // 4. Bearer authentication and impersonation, shared with the JSON API.
  app.use(cfg.path, async (req: AuthedRequest, res: Response, next: NextFunction) => {
    try {
      const caller = await authenticateHttp(deps.auth, req.headers, req.socket.remoteAddress);
      req.caller = caller;
      req.auth = authInfoFor(caller);
      next();
    } catch (e) {
      if (!(e instanceof HttpAuthFailure)) return next(e);
      // Refusals a stranger can cause are logged sampled; those of an authenticated caller always.
      if (!e.authenticated)
        refusals.warn(
          {
            audit: true,
            status: e.status,
            source: req.socket.remoteAddress,
            result: 'refused',
            ...(e.detail ? { err: e.detail } : {}),
          },
          e.message,
        );
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
      if (e.status === 503 && e.authenticated) log.error({ err: e.detail ?? e.message }, 'authorization failed');
      refuse(req, res, e);
    }
  });

  // ---- 2025 era: sessions ----
  const sessionFor = (req: AuthedRequest, res: Response): Session | undefined => {
    const id = req.headers['mcp-session-id'];
    if (typeof id !== 'string' || !id) {
      rpcError(res, 400, 'Bad Request: missing mcp-session-id header', -32000, idOf(req.body));
      return undefined;
    }
    const s = sessions.get(id);
    if (!s) {
      rpcError(res, 404, 'Session not found', -32001, idOf(req.body));
      return undefined;
    }
    if (!req.caller || s.identity !== identityOf(req.caller)) {
      rpcError(res, 403, 'this session belongs to another user', -32000, idOf(req.body));
      return undefined;
    }
    s.lastSeen = Date.now();
    return s;
  };

  const legacyPost = async (req: AuthedRequest, res: Response) => {
    if (req.headers['mcp-session-id'] !== undefined) {
      const s = sessionFor(req, res);
      if (s) await s.transport.handleRequest(req, res, req.body);
      return;
    }
    if (!isInitializeRequest(req.body))
      return rpcError(
        res,
        400,
        'Bad Request: no mcp-session-id header and not an initialize request',
        -32000,
        idOf(req.body),
      );
    const caller = req.caller!;
    makeRoom(caller);
    const mcp = createMcpServer(ctx, serverOpts, { era: 'legacy', owner: caller });
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // Resumable streams: priming events with ids, Last-Event-ID replay, a reconnect hint.
      eventStore: new SessionEventStore(),
      retryInterval: 1000,
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
  };

  // ---- 2026-07-28: per request ----
  const modernPost = async (req: AuthedRequest, res: Response) => {
    const caller = req.caller!;
    let body = req.body as { method?: unknown; params?: Record<string, unknown> } | undefined;
    if (body?.method === 'subscriptions/listen') {
      const listen = await readableListen(ctx, caller, body.params);
      if (listen) body = { ...body, params: listen.params };
      const releases = [...new Set(listen?.uris)].map(follow);
      makeRoom(caller);
      const id = randomUUID();
      streams.set(id, { identity: identityOf(caller), lastSeen: Date.now(), res });
      res.on('close', () => {
        streams.delete(id);
        for (const r of releases) r();
      });
    }
    await currentCaller.run(caller, () => serveModern(req, res, body));
  };

  app.all(cfg.path, async (req: AuthedRequest, res: Response) => {
    try {
      const method = req.method.toUpperCase();
      // A POST whose body express could not read as JSON has no envelope claim: the 2025 path
      // answers it (415 and friends) exactly as before.
      const legacy =
        method !== 'POST' || req.body === undefined
          ? true
          : await isLegacyRequest(await toWebRequest(req, req.body), req.body);
      if (!legacy) return await modernPost(req, res);
      if (method === 'POST') return await legacyPost(req, res);
      if (method === 'GET' || method === 'DELETE') {
        const s = sessionFor(req, res);
        if (s) await s.transport.handleRequest(req, res);
        return;
      }
      res.setHeader('Allow', 'GET, POST, DELETE');
      rpcError(res, 405, 'Method not allowed.');
    } catch (e) {
      log.error({ err: (e as Error).message }, 'mcp request failed');
      if (!res.headersSent) rpcError(res, 500, 'internal server error', -32603, idOf(req.body));
    }
  });

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
    for (const [id, s] of sessions) if (s.lastSeen < cutoff) closeSession(id, 'idle');
  }, 30_000);
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
    streams: () => streams.size,
    async close() {
      clearInterval(sweep);
      stopListChanges();
      for (const f of followed.values()) f.release();
      followed.clear();
      await modern.close().catch(() => undefined);
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
