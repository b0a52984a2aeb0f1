import type { JSONRPCMessage, McpServer, MessageExtraInfo, Transport } from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import type { ApiContext } from '../api/context.js';
import type { Caller } from '../auth/identity.js';
import { changeFeed } from './feed.js';
import type { McpServerOptions } from './guard.js';
import { readableListen } from './resources.js';
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
    const listen = await readableListen(ctx, opts.localCaller, m.params);
    if (!listen) return m;
    for (const uri of listen.uris)
      if (!followed.has(uri))
        followed.set(
          uri,
          feed.onResource(uri, (u) => {
            if (current?.isConnected()) void current.server.sendResourceUpdated({ uri: u }).catch(() => undefined);
          }),
        );
    return { ...m, params: listen.params } as JSONRPCMessage;
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
