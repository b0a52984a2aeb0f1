import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { componentUsed } from '../cluster/need.js';
import { runBuildScript } from '../cluster/paths.js';
import { startChildServer } from '../cluster/proc.js';
import { freePort } from '../registry/registry.js';

/**
 * A real Prometheus Alertmanager (built from its Go module by test/alertmanager/build.sh) on
 * loopback, with one route to one webhook receiver: what tests use to check that kpromo's
 * receiver understands what Alertmanager actually sends (grouping, firing and resolved
 * notifications, its bearer token).
 */
export interface Alertmanager {
  /** Base URL of its API (`/api/v2/alerts` takes alerts as Prometheus would send them). */
  url: string;
  /** Posts alerts to Alertmanager's API v2, as a Prometheus server does. */
  postAlerts(alerts: AlertInput[]): Promise<void>;
  logFile: string;
  stop(): Promise<void>;
}

export interface AlertInput {
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  /** Set in the past to resolve the alert. */
  endsAt?: string;
  startsAt?: string;
}

/** Path of the alertmanager binary, built on first use. */
export function ensureAlertmanager(): string {
  componentUsed('alertmanager');
  const path = runBuildScript('../alertmanager/build.sh', [], { quiet: true });
  if (!existsSync(path))
    throw new Error(`test/alertmanager/build.sh printed ${JSON.stringify(path)}, which does not exist`);
  return path;
}

/**
 * Starts Alertmanager routing every alert to `webhook` (with `bearerToken` as its Authorization),
 * grouped per alert (`group_by: ['...']`) with short waits so a test sees notifications in seconds,
 * and resolved notifications sent.
 */
export async function startAlertmanager(o: { webhook: string; bearerToken: string }): Promise<Alertmanager> {
  const bin = ensureAlertmanager();
  const [port, clusterPort] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'kpromo-alertmanager-'));
  const config = join(dir, 'alertmanager.yml');
  // JSON is YAML.
  writeFileSync(
    config,
    JSON.stringify({
      route: {
        receiver: 'kpromo',
        group_by: ['...'],
        group_wait: '1s',
        group_interval: '1s',
        repeat_interval: '1h',
      },
      receivers: [
        {
          name: 'kpromo',
          webhook_configs: [
            {
              url: o.webhook,
              send_resolved: true,
              http_config: { authorization: { type: 'Bearer', credentials: o.bearerToken } },
            },
          ],
        },
      ],
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const logFile = join(dir, 'alertmanager.log');
  const server = await startChildServer({
    name: 'alertmanager',
    bin,
    args: [
      `--config.file=${config}`,
      `--storage.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // A single instance: no gossip peers, but the cluster listener still wants a free port.
      `--cluster.listen-address=127.0.0.1:${clusterPort}`,
    ],
    logFile,
    ready: async () => (await fetch(`${url}/-/ready`)).ok,
    timeoutMs: 60_000,
    pollMs: 200,
  });
  return {
    url,
    logFile,
    stop: server.stop,
    postAlerts: async (alerts) => {
      const res = await fetch(`${url}/api/v2/alerts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(alerts),
      });
      if (!res.ok) throw new Error(`Alertmanager refused the alerts: ${res.status} ${await res.text()}`);
    },
  };
}
