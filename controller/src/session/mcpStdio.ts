import { pino } from 'pino';
import type { Config } from '../config.js';
import type { McpConfig } from '../mcp/config.js';
import { serveMcpStdio } from '../mcp/stdio.js';
import { Egress, setDefaultEgress } from '../net/guardedFetch.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { openLocalSession } from './local.js';

/**
 * `kpromo-controller mcp --stdio`: a local MCP server over stdin/stdout, reading through its own
 * informer cache ({@link openLocalSession}). The caller is whoever runs it: every call is authorised
 * as the kubeconfig identity (SelfSubjectAccessReview), write mode comes from mcp.write. Logs must
 * go to stderr.
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
  const session = await openLocalSession({
    kubeconfig: cfg.kubeconfig,
    context: cfg.context,
    namespaces: cfg.namespaces,
    defaultNamespace: cfg.defaultNamespace,
    clusterAccess: cfg.clusterAccess,
    kubeClient: cfg.kubeClient,
    log,
    startTimeoutMs: 60_000,
  });
  const { cache } = session;
  await Promise.all(
    cache.environments().map((e) => cache.waitForEnvironment(e, AbortSignal.timeout(30_000)).catch(() => undefined)),
  );
  const served = serveMcpStdio(session.api, {
    write: cfg.mcp.write,
    log,
    localCaller: session.caller,
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await served.close().catch(() => undefined);
    session.close();
    restoreEgress();
    if (opts.exitOnClose) process.exit(0);
  };
  // The client closing our stdin ends the session.
  void served.closed.then(close);
  log.info({ write: cfg.mcp.write }, 'mcp stdio server ready');
  return { close };
}
