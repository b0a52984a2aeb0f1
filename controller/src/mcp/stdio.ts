import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { pino } from 'pino';
import { Access } from '../api/access.js';
import { Authorizer } from '../auth/authorizer.js';
import { localCaller } from '../auth/localIdentity.js';
import type { Config } from '../config.js';
import { ClusterClients } from '../kube/clusters.js';
import { LiveCache } from '../kube/liveCache.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { resolveDigest } from '../oci/copyImage.js';
import type { McpConfig } from './config.js';
import { createMcpServer } from './server.js';

/**
 * `kpromo-controller mcp --stdio`: a local MCP server over stdin/stdout, reading through its own
 * informer cache. The caller is whoever runs it: every call is authorised as the kubeconfig
 * identity (SelfSubjectAccessReview), write mode comes from mcp.write. Logs must go to stderr.
 */
export async function runMcpStdio(
  cfg: Pick<Config, 'kubeconfig' | 'context' | 'namespaces' | 'defaultNamespace' | 'logLevel' | 'clusterAccess'> & {
    mcp: McpConfig;
  },
  opts: { log?: Logger; exitOnClose?: boolean } = {},
): Promise<{ close(): Promise<void> }> {
  // stdout carries the protocol: logs go to stderr.
  const log = opts.log ?? createLogger({ level: cfg.logLevel, destination: pino.destination(2) });
  const clients = ClusterClients.fromFile(cfg.kubeconfig, cfg.context, cfg.clusterAccess);
  const cache = new LiveCache(clients, cfg.namespaces, log);
  await cache.start(AbortSignal.timeout(60_000));
  await Promise.all(
    cache.environments().map((e) => cache.waitForEnvironment(e, AbortSignal.timeout(30_000)).catch(() => undefined)),
  );
  const authorizer = new Authorizer(clients.control);
  const server = createMcpServer(
    { cache, control: clients.control, access: new Access(authorizer), namespace: cfg.defaultNamespace, resolveDigest },
    { write: cfg.mcp.write, authorizer, log, localCaller: await localCaller(clients.control) },
  );
  const transport = new StdioServerTransport();
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await server.close().catch(() => undefined);
    cache.stop();
    if (opts.exitOnClose) process.exit(0);
  };
  transport.onclose = () => void close();
  // The client closing our stdin ends the session (the SDK transport does not watch for EOF).
  process.stdin.once('end', () => void close());
  await server.connect(transport);
  log.info({ write: cfg.mcp.write }, 'mcp stdio server ready');
  return { close };
}
