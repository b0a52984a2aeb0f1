import * as k8s from '@kubernetes/client-node';
import type { ExporterConfig } from './config.js';
import { Exporter } from './exporter.js';
import type { Logger } from './log.js';
import { createPortClient } from './portClient.js';
import { PortSink } from './portSink.js';

export function kubeConfigs(cfg: ExporterConfig): Array<{ name: string; kc: k8s.KubeConfig }> {
  return cfg.clusters.map((c) => {
    const kc = new k8s.KubeConfig();
    if (c.kubeconfig) kc.loadFromFile(c.kubeconfig);
    else kc.loadFromDefault();
    if (c.context) kc.setCurrentContext(c.context);
    return { name: c.name, kc };
  });
}

export interface RunningExporter {
  exporter: Exporter;
  sink: PortSink;
  stats: ReturnType<typeof createPortClient>['stats'];
  /** Waits for every watcher's initial list and for Port writes to drain, then deletes stale owned entities. */
  resync(): Promise<{ deleted: number; skipped?: string }>;
  stop(): void;
}

/** Wires config → Port client → sink → exporter and schedules the periodic resync. */
export function runExporter(cfg: ExporterConfig, log: Logger, clusters = kubeConfigs(cfg)): RunningExporter {
  if (!cfg.port.clientId || !cfg.port.clientSecret)
    throw new Error('Port credentials missing: set port.clientId/clientSecret or PORT_CLIENT_ID/PORT_CLIENT_SECRET');
  const { api, stats } = createPortClient({
    baseUrl: cfg.port.baseUrl,
    clientId: cfg.port.clientId,
    clientSecret: cfg.port.clientSecret,
    log,
    // Port records the User-Agent as the entities' datasource; Port's exporter's form is
    // `port-k8s-exporter/<version> (statekey/<key>)`, and ownership searches match on both parts.
    userAgent: `kpromo-exporter/0.1 (statekey/${cfg.stateKey})`,
  });
  for (const w of cfg.warnings) log.warn({ config: true }, w);
  const portDialect = cfg.dialect === 'port-k8s-exporter';
  const sink = new PortSink({
    api,
    log,
    stateKey: cfg.stateKey,
    blueprints: cfg.blueprints,
    createBlueprints: cfg.port.createBlueprints,
    concurrency: cfg.port.concurrency,
    deleteDependents: cfg.deleteDependents,
    createMissingRelatedEntities: cfg.createMissingRelatedEntities,
    merge: portDialect,
    ownership: portDialect ? 'datasource' : 'property',
    overwriteActions: cfg.overwriteCrdsActions,
  });
  const exporter = new Exporter({ config: cfg, clusters, sink, log });
  sink.start();
  exporter.start();
  let resyncing: Promise<{ deleted: number; skipped?: string }> | undefined;
  const resync = async () => {
    while (!exporter.synced) await new Promise((r) => setTimeout(r, 100));
    resyncing ??= sink.resync(exporter.ownedBlueprints, exporter.mappingErrors.size).finally(() => {
      resyncing = undefined;
    });
    const r = await resyncing;
    log.info(r, 'resync done');
    return r;
  };
  const timer =
    cfg.resyncIntervalSeconds > 0
      ? setInterval(
          () => void resync().catch((e) => log.error({ err: e }, 'resync failed')),
          cfg.resyncIntervalSeconds * 1000,
        )
      : undefined;
  return {
    exporter,
    sink,
    stats,
    resync,
    stop() {
      if (timer) clearInterval(timer);
      exporter.stop();
      sink.stop();
    },
  };
}
