import type { Server } from 'node:http';
import { FLOOD_DEFAULTS } from './auth/config.js';
import { httpAuthFrom } from './auth/httpAuth.js';
import type { Config } from './config.js';
import { Controller, type ControllerOptions } from './controller.js';
import { commitImageChange } from './delivery/gitCommit.js';
import type { ControllerPlugin } from './extension/plugin.js';
import { createHistoryRecorder } from './history/wiring.js';
import { ClusterClients } from './kube/clusters.js';
import { ClientRateLimiter } from './kube/rateLimit.js';
import { KubeRest } from './kube/rest.js';
import { type McpHttp, startMcpHttp } from './mcp/http.js';
import { Egress, registerOwnListener, setDefaultEgress } from './net/guardedFetch.js';
import { NotificationProviders } from './notify/registry.js';
import { createNotifier } from './notify/wiring.js';
import { LivenessMonitor } from './observability/liveness.js';
import { createLogger, type Logger } from './observability/logger.js';
import { metrics } from './observability/metrics.js';
import { initTracing, shutdownTracing } from './observability/tracing.js';
import { copyImage, resolveDigest } from './oci/copyImage.js';
import { loadPlugins } from './reconcile/plugins.js';
import { createApp, listen } from './server/httpServer.js';

export interface Running {
  controller: Controller;
  server?: Server;
  port?: number;
  /** MCP Streamable HTTP listener (cfg.mcp.enabled). */
  mcp?: McpHttp;
  log: Logger;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Serve the HTTP API (and MCP when configured); default true. */
  serve?: boolean;
  log?: Logger;
  /** Extensions from outside the controller package (PLUGINS.md); checked before anything starts. */
  plugins?: readonly ControllerPlugin[];
  /** Test seam: adjust the options the controller is built with. */
  customize?: (o: ControllerOptions) => ControllerOptions;
}

/**
 * Builds and starts the whole controller process from a validated Config (used by main and tests).
 * Throws {@link PluginError} before starting anything when a plugin cannot be loaded.
 */
export async function startController(cfg: Config, opts: StartOptions = {}): Promise<Running> {
  const extensions = loadPlugins(opts.plugins);
  const log = opts.log ?? createLogger({ level: cfg.logLevel });
  initTracing({ serviceName: 'kpromo-controller', otlpEndpoint: cfg.tracing.otlpEndpoint });
  const sc = cfg.supplyChain;
  if (sc.namespace && (sc.trustedKeys.length || sc.signingKeys.length) && cfg.namespaces.includes(sc.namespace))
    // Tenants with Secret rights where the key Secrets live could swap or read them: say so at start.
    log.warn(
      { namespace: sc.namespace },
      'supplyChain.namespace is also a reconciled namespace: whoever may write Secrets there can swap trusted keys, whoever may read them can sign promotions; keep tenants out of it',
    );
  const clients = ClusterClients.fromConfig(cfg);
  let notifications: NotificationProviders | undefined;
  // egress: one SSRF guard for webhooks and (as process default) health checks; own listeners are registered below.
  const egress = new Egress({ allowedCidrs: cfg.egress.allowedCidrs });
  const egressCleanup = [setDefaultEgress(egress)];
  // TokenReviews and SubjectAccessReviews (what callers, and strangers, cause) go through their own
  // client and rate limit (auth.reviewClient); Lease renewals have theirs (leaderElectionClient).
  const reviewName = `${clients.control.clusterName}/reviews`;
  const reviews = new KubeRest(
    clients.control.kc,
    clients.control.clusterName,
    undefined,
    new ClientRateLimiter({
      ...(cfg.auth.reviewClient ?? FLOOD_DEFAULTS.reviewClient),
      onWaited: (ms, priority) => {
        metrics.kubeClientThrottled.inc({ cluster: reviewName, priority });
        metrics.kubeClientThrottleSeconds.inc({ cluster: reviewName, priority }, ms / 1000);
      },
    }),
  );
  const base: ControllerOptions = {
    clients,
    namespaces: cfg.namespaces,
    defaultNamespace: cfg.defaultNamespace,
    lineStopNamespace: cfg.lineStopNamespace,
    orgPolicyNamespace: cfg.orgPolicyNamespace,
    supplyChain: cfg.supplyChain,
    persons: cfg.persons,
    ...(cfg.planURL ? { planURL: cfg.planURL } : {}),
    agents: cfg.auth.agents,
    workers: cfg.workers,
    leaderElection: { ...cfg.leaderElection, identity: cfg.leaderElection.identity ?? `kpromo-${process.pid}` },
    copyImage: (req) => copyImage(req),
    commitImageChange: (req) => commitImageChange(req),
    resolveDigest: (ep, repo, tag) => resolveDigest(ep, repo, tag),
    resourceKinds: cfg.resourceKinds,
    shard:
      cfg.shard?.name && cfg.shard.namespaceSelector
        ? { name: cfg.shard.name, namespaceSelector: cfg.shard.namespaceSelector }
        : undefined,
    notify: (e) => notifications?.emit(e),
    extensions,
    log,
    maxAttempts: cfg.maxAttempts,
    shutdownGraceMs: cfg.shutdownGraceSeconds * 1000,
    reviewClient: reviews,
  };
  const controller = new Controller(opts.customize ? opts.customize(base) : base);
  const webhooks = createNotifier({
    cache: controller.cache,
    control: clients.control,
    readSecret: (ns, name, key) => controller.readSecret(ns, name, key),
    egress,
    log,
  });
  // Release history (history/): recorded from the same release events, as the controller.
  const history = createHistoryRecorder({ cache: controller.cache, control: clients.control, log });
  notifications = new NotificationProviders([webhooks, history, ...extensions.notificationProviders.values()], log);
  // One authentication for both HTTP doors (JSON API and MCP); one authorizer beneath everything.
  const auth = httpAuthFrom(reviews, cfg.auth, controller.authorizer, { egress, log });
  const liveness = new LivenessMonitor({
    informerErrors: () => controller.cache.health().errors,
    leaderStale: () => controller.leaderStale(),
  });
  let server: Server | undefined;
  let started = false;
  if (opts.serve !== false) {
    const app = createApp({
      api: controller.api,
      auth,
      anonymousMetrics: cfg.auth.anonymousMetrics,
      lineStopAlerts: { ...cfg.lineStopAlerts, lineStopNamespace: cfg.lineStopNamespace },
      log,
      healthy: () => liveness.check(),
      ready: () => {
        const h = controller.cache.health();
        return {
          ready: started && h.synced,
          detail: {
            synced: h.synced,
            leader: controller.isLeader,
            errors: h.errors,
            ...(cfg.shard?.name ? { shard: cfg.shard.name, namespaces: controller.shardNamespaces() } : {}),
          },
        };
      },
    });
    server = await listen(app, cfg.server.host, cfg.server.port);
  }
  const mcp =
    cfg.mcp.enabled && opts.serve !== false ? await startMcpHttp(controller.api, cfg.mcp, { log, auth }) : undefined;
  egressCleanup.push(registerOwnListener('API', server), registerOwnListener('MCP', mcp?.server));
  await controller.start();
  started = true;
  const addr = server?.address();
  log.info(
    { port: typeof addr === 'object' ? addr?.port : undefined, identity: cfg.leaderElection.identity },
    'controller started',
  );
  return {
    controller,
    server,
    port: typeof addr === 'object' && addr ? addr.port : undefined,
    log,
    mcp,
    async stop() {
      await mcp?.close();
      auth.refusals?.close();
      liveness.stop();
      await controller.stop();
      history.close();
      await notifications?.flush().catch(() => undefined);
      await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
      await shutdownTracing();
      for (const undo of egressCleanup) undo();
    },
  };
}
