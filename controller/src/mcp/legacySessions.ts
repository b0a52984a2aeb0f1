import { randomUUID } from 'node:crypto';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { isInitializeRequest, type McpServer } from '@modelcontextprotocol/server';
import type { Response } from 'express';
import type { ApiContext } from '../api/context.js';
import type { Caller } from '../auth/identity.js';
import type { Logger } from '../observability/logger.js';
import type { McpConfig } from './config.js';
import { SessionEventStore } from './eventStore.js';
import type { McpServerOptions } from './guard.js';
import type { AllowedPeers } from './httpGate.js';
import { type AuthedRequest, identityOf, idOf, rpcError } from './httpRpc.js';
import { createMcpServer } from './server.js';
import type { BudgetPool, SessionInfo } from './sessionBudget.js';

interface Session {
  transport: NodeStreamableHTTPServerTransport;
  mcp: McpServer;
  /** Who opened it: the user, and the proxy when it was opened through impersonation. */
  identity: string;
  lastSeen: number;
}

export interface LegacySessionsOptions {
  log: Logger;
  serverOpts: McpServerOptions;
  /** The Host/Origin lists, also checked by each session's transport. */
  allowed: AllowedPeers;
  /** Makes room in the shared budget before a session opens. */
  makeRoom: (caller: Caller) => void;
}

/**
 * The 2025-era protocol: sessions (Mcp-Session-Id), one McpServer per session bound to the user
 * (and proxy) that opened it; only they may use it. Idle sessions are closed by closeIdle.
 */
export class LegacySessions implements BudgetPool {
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly ctx: ApiContext,
    private readonly cfg: McpConfig,
    private readonly o: LegacySessionsOptions,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** A POST: to its session, or an initialize request that opens one. */
  async post(req: AuthedRequest, res: Response): Promise<void> {
    if (req.headers['mcp-session-id'] !== undefined) {
      const s = this.sessionFor(req, res);
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
    await this.open(req, res, req.caller!);
  }

  /** A GET (the session's stream) or DELETE. */
  async resume(req: AuthedRequest, res: Response): Promise<void> {
    const s = this.sessionFor(req, res);
    if (s) await s.transport.handleRequest(req, res);
  }

  entries(): SessionInfo[] {
    return [...this.sessions].map(([id, s]) => ({ id, identity: s.identity, lastSeen: s.lastSeen }));
  }

  evict(id: string): void {
    this.closeSession(id, 'session budget');
  }

  closeIdle(): void {
    const cutoff = Date.now() - this.cfg.sessionIdleSeconds * 1000;
    for (const [id, s] of this.sessions) if (s.lastSeen < cutoff) this.closeSession(id, 'idle');
  }

  async close(): Promise<void> {
    for (const s of this.sessions.values()) {
      await s.transport.close().catch(() => undefined);
      await s.mcp.close().catch(() => undefined);
    }
    this.sessions.clear();
  }

  private async open(req: AuthedRequest, res: Response, caller: Caller): Promise<void> {
    const { log, serverOpts, allowed } = this.o;
    this.o.makeRoom(caller);
    const mcp = createMcpServer(this.ctx, serverOpts, { era: 'legacy', owner: caller });
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // Resumable streams: priming events with ids, Last-Event-ID replay, a reconnect hint.
      eventStore: new SessionEventStore(),
      retryInterval: 1000,
      enableDnsRebindingProtection: true,
      allowedHosts: allowed.hosts,
      allowedOrigins: allowed.origins,
      onsessioninitialized: (id) => {
        this.sessions.set(id, { transport, mcp, identity: identityOf(caller), lastSeen: Date.now() });
        log.info(
          { session: id, user: caller.username, ...(caller.via ? { via: caller.via.username } : {}) },
          'mcp session opened',
        );
      },
      onsessionclosed: (id) => {
        this.sessions.delete(id);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) this.sessions.delete(transport.sessionId);
    };
    await mcp.connect(transport);
    await transport.handleRequest(req, res, req.body);
  }

  /** The request's session, or an error answer (missing header, unknown session, another user's). */
  private sessionFor(req: AuthedRequest, res: Response): Session | undefined {
    const id = req.headers['mcp-session-id'];
    if (typeof id !== 'string' || !id) {
      rpcError(res, 400, 'Bad Request: missing mcp-session-id header', -32000, idOf(req.body));
      return undefined;
    }
    const s = this.sessions.get(id);
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
  }

  private closeSession(id: string, why: string): void {
    const s = this.sessions.get(id);
    if (!s) return;
    this.sessions.delete(id);
    void s.transport.close().catch(() => undefined);
    void s.mcp.close().catch(() => undefined);
    this.o.log.info({ session: id, identity: s.identity }, `mcp session closed (${why})`);
  }
}
