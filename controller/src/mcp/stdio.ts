import type { JSONRPCMessage, McpServer, MessageExtraInfo, Transport } from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import { pino } from 'pino';
import { Access } from '../api/access.js';
import type { ApiContext } from '../api/context.js';
import { Authorizer } from '../auth/authorizer.js';
import type { Caller } from '../auth/identity.js';
import { localCaller } from '../auth/localIdentity.js';
import type { Config } from '../config.js';
import { ClusterClients } from '../kube/clusters.js';
import { LiveCache } from '../kube/liveCache.js';
import { Egress, setDefaultEgress } from '../net/guardedFetch.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { resolveDigest } from '../oci/copyImage.js';
import { BUILTIN_WORKLOAD_KINDS } from '../rollout/registry.js';
import type { McpConfig } from './config.js';
import { changeFeed } from './feed.js';
import type { McpServerOptions } from './guard.js';
import { mayRead } from './resources.js';
import { createMcpServer } from './server.js';

/**
 * The stdio wire, watched: a 2026-07-28 subscriptions/listen request keeps only the resource URIs
 * the local caller may read (so its acknowledgement says what will be delivered), and those URIs
 * are followed in the informer cache; the end of the connection releases them.
 */
class ListenFilteringTransport implements Transport {
  private inbound: Promise<void> = Promise.resolve();
  private deliver?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  private closeHandler?: () => void;
  constructor(
    private readonly inner: Transport,
    private readonly filter: (message: JSONRPCMessage) => Promise<JSONRPCMessage>,
    private readonly onClosed: () => void,
  ) {
    inner.onmessage = (message, extra) => {
      // In arrival order, even while a listen request waits for its RBAC checks.
      this.inbound = this.inbound
        .then(() => this.filter(message))
        .then((m) => this.deliver?.(m, extra))
        .catch((e) => this.onerror?.(e as Error));
    };
    inner.onclose = () => {
      this.onClosed();
      this.closeHandler?.();
    };
    inner.onerror = (e) => this.onerror?.(e);
  }
  onerror?: (error: Error) => void;
  set onmessage(fn: ((message: JSONRPCMessage, extra?: MessageExtraInfo) => void) | undefined) {
    this.deliver = fn;
  }
  get onmessage() {
    return this.deliver;
  }
  set onclose(fn: (() => void) | undefined) {
    this.closeHandler = fn;
  }
  get onclose() {
    return this.closeHandler;
  }
  start() {
    return this.inner.start();
  }
  send(message: JSONRPCMessage, options?: Parameters<Transport['send']>[1]) {
    return this.inner.send(message, options);
  }
  close() {
    return this.inner.close();
  }
}

/**
 * Serves one stdio connection from `ctx`: 2026-07-28 or 2025 (the client's opening decides), the
 * caller being the local user.
 */
export function serveMcpStdio(
  ctx: ApiContext,
  opts: McpServerOptions & { localCaller: Caller },
  transport: Transport = new StdioServerTransport(),
): { close(): Promise<void>; closed: Promise<void> } {
  const feed = changeFeed(ctx);
  let current: McpServer | undefined;
  const followed = new Map<string, () => void>();
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => {
    resolveClosed = r;
  });
  const release = () => {
    for (const r of followed.values()) r();
    followed.clear();
    resolveClosed();
  };
  const filter = async (m: JSONRPCMessage): Promise<JSONRPCMessage> => {
    if (!('method' in m) || m.method !== 'subscriptions/listen' || !('id' in m)) return m;
    const params = (m.params ?? {}) as { notifications?: { resourceSubscriptions?: unknown } };
    const uris = params.notifications?.resourceSubscriptions;
    if (!Array.isArray(uris)) return m;
    const allowed: string[] = [];
    for (const uri of uris)
      if (typeof uri === 'string' && (await mayRead(opts, opts.localCaller, uri))) allowed.push(uri);
    for (const uri of allowed)
      if (!followed.has(uri))
        followed.set(
          uri,
          feed.onResource(uri, (u) => {
            if (current?.isConnected()) void current.server.sendResourceUpdated({ uri: u }).catch(() => undefined);
          }),
        );
    return {
      ...m,
      params: { ...params, notifications: { ...params.notifications, resourceSubscriptions: allowed } },
    } as JSONRPCMessage;
  };
  const handle = serveStdio(
    ({ era }) => {
      current = createMcpServer(ctx, opts, { era, owner: opts.localCaller });
      return current;
    },
    {
      transport: new ListenFilteringTransport(transport, filter, release),
      onerror: (e) => opts.log.debug({ err: e.message }, 'mcp stdio'),
    },
  );
  return {
    closed,
    async close() {
      await handle.close();
      release();
    },
  };
}

/**
 * `kpromo-controller mcp --stdio`: a local MCP server over stdin/stdout, reading through its own
 * informer cache. The caller is whoever runs it: every call is authorised as the kubeconfig
 * identity (SelfSubjectAccessReview), write mode comes from mcp.write. Logs must go to stderr.
 */
export async function runMcpStdio(
  cfg: Pick<Config, 'kubeconfig' | 'context' | 'namespaces' | 'defaultNamespace' | 'logLevel' | 'clusterAccess'> &
    Partial<Pick<Config, 'kubeClient' | 'egress'>> & {
      mcp: McpConfig;
    },
  opts: { log?: Logger; exitOnClose?: boolean } = {},
): Promise<{ close(): Promise<void> }> {
  // stdout carries the protocol: logs go to stderr.
  const log = opts.log ?? createLogger({ level: cfg.logLevel, destination: pino.destination(2) });
  // Digests are resolved in Environment registries: through the same egress guard as the controller.
  const restoreEgress = setDefaultEgress(new Egress({ allowedCidrs: cfg.egress?.allowedCidrs ?? [] }));
  const clients = ClusterClients.fromFile(cfg.kubeconfig, cfg.context, cfg.clusterAccess, cfg.kubeClient);
  const cache = new LiveCache(clients, cfg.namespaces, { workloadKinds: BUILTIN_WORKLOAD_KINDS, log });
  await cache.start(AbortSignal.timeout(60_000));
  await Promise.all(
    cache.environments().map((e) => cache.waitForEnvironment(e, AbortSignal.timeout(30_000)).catch(() => undefined)),
  );
  const authorizer = new Authorizer(clients.control);
  const served = serveMcpStdio(
    { cache, control: clients.control, access: new Access(authorizer), namespace: cfg.defaultNamespace, resolveDigest },
    { write: cfg.mcp.write, authorizer, log, localCaller: await localCaller(clients.control) },
  );
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await served.close().catch(() => undefined);
    cache.stop();
    restoreEgress();
    if (opts.exitOnClose) process.exit(0);
  };
  // The client closing our stdin ends the session.
  void served.closed.then(close);
  log.info({ write: cfg.mcp.write }, 'mcp stdio server ready');
  return { close };
}
