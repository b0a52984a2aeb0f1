import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, type ServerEvent, type ServerEventBus } from '@modelcontextprotocol/server';
import type { Response } from 'express';
import type { ApiContext } from '../api/context.js';
import type { Caller } from '../auth/identity.js';
import type { Logger } from '../observability/logger.js';
import type { McpConfig } from './config.js';
import { type ChangeFeed, changeFeed } from './feed.js';
import type { McpServerOptions } from './guard.js';
import { type AuthedRequest, identityOf } from './httpRpc.js';
import { readableListen } from './resources.js';
import { createMcpServer } from './server.js';
import type { BudgetPool, SessionInfo } from './sessionBudget.js';

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

interface Stream {
  identity: string;
  lastSeen: number;
  res: Response;
}

export interface StatelessEndpointOptions {
  log: Logger;
  serverOpts: McpServerOptions;
  /** Makes room in the shared budget before a listen stream opens. */
  makeRoom: (caller: Caller) => void;
}

/**
 * Protocol 2026-07-28, served statelessly: a fresh McpServer per request (server/discover,
 * per-request _meta, Mcp-Method/Mcp-Name validation, cache hints). Its subscriptions/listen streams
 * are the only state: they count against the shared budget and follow the change feed.
 */
export class StatelessEndpoint implements BudgetPool {
  private readonly streams = new Map<string, Stream>();
  /** Resource URIs followed by open listen streams, with how many streams follow each. */
  private readonly followed = new Map<string, { n: number; release: () => void }>();
  private readonly currentCaller = new AsyncLocalStorage<Caller>();
  private readonly feed: ChangeFeed;
  private readonly handler: ReturnType<typeof createMcpHandler>;
  private readonly serve: ReturnType<typeof toNodeHandler>;
  private readonly stopListChanges: () => void;

  constructor(
    private readonly ctx: ApiContext,
    cfg: McpConfig,
    private readonly o: StatelessEndpointOptions,
  ) {
    const { log, serverOpts } = o;
    this.feed = changeFeed(ctx);
    const bus = new CallerScopedBus(this.currentCaller);
    this.handler = createMcpHandler(() => createMcpServer(ctx, serverOpts, { era: 'modern' }), {
      legacy: 'reject',
      bus,
      maxSubscriptions: cfg.maxSessions,
      onerror: (e) => log.debug({ err: e.message }, 'mcp request rejected'),
    });
    this.serve = toNodeHandler(this.handler, {
      onerror: (e) => log.error({ err: e.message }, 'mcp request failed'),
    });
    this.stopListChanges = this.feed.onList((resource, namespace) =>
      bus.publishWhere({ kind: 'resources_list_changed' }, (caller) =>
        ctx.access.may(caller, { verb: 'list', resource, namespace }),
      ),
    );
  }

  get size(): number {
    return this.streams.size;
  }

  /** A POST; subscriptions/listen keeps its response open as a stream of the URIs the caller may read. */
  async post(req: AuthedRequest, res: Response): Promise<void> {
    const caller = req.caller!;
    let body = req.body as { method?: unknown; params?: Record<string, unknown> } | undefined;
    if (body?.method === 'subscriptions/listen') {
      const listen = await readableListen(this.ctx, caller, body.params);
      if (listen) body = { ...body, params: listen.params };
      const releases = [...new Set(listen?.uris)].map((uri) => this.follow(uri));
      this.o.makeRoom(caller);
      const id = randomUUID();
      this.streams.set(id, { identity: identityOf(caller), lastSeen: Date.now(), res });
      res.on('close', () => {
        this.streams.delete(id);
        for (const r of releases) r();
      });
    }
    await this.currentCaller.run(caller, () => this.serve(req, res, body));
  }

  entries(): SessionInfo[] {
    return [...this.streams].map(([id, s]) => ({ id, identity: s.identity, lastSeen: s.lastSeen }));
  }

  evict(id: string): void {
    const st = this.streams.get(id);
    this.streams.delete(id);
    st?.res.destroy();
    this.o.log.info({ stream: id, identity: st?.identity }, 'mcp listen stream closed (session budget)');
  }

  async close(): Promise<void> {
    this.stopListChanges();
    for (const f of this.followed.values()) f.release();
    this.followed.clear();
    await this.handler.close().catch(() => undefined);
  }

  /** Follows a resource URI's changes (one feed subscription however many streams); returns the release. */
  private follow(uri: string): () => void {
    const f = this.followed.get(uri);
    if (f) f.n++;
    else
      this.followed.set(uri, {
        n: 1,
        release: this.feed.onResource(uri, (u) => this.handler.notify.resourceUpdated(u)),
      });
    return () => {
      const g = this.followed.get(uri);
      if (g && --g.n === 0) {
        g.release();
        this.followed.delete(uri);
      }
    };
  }
}
