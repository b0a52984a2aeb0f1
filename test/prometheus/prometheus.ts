import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { componentUsed } from '../cluster/need.js';
import { runBuildScript } from '../cluster/paths.js';
import { startChildServer } from '../cluster/proc.js';
import { freePort } from '../registry/registry.js';

/**
 * A real Prometheus server (built from its Go module by test/prometheus/build.sh) on loopback,
 * scraping the metric endpoints a test serves for its sample apps every second. The numbers are the
 * test's; the scraping, the storage, PromQL and the HTTP query API are Prometheus's own.
 */
export interface Prometheus {
  /** Base URL (the query API is `${url}/api/v1/query`). */
  url: string;
  logFile: string;
  /** Resolves once Prometheus has scraped every target at least once and reports them up. */
  waitForTargets(timeoutMs?: number): Promise<void>;
  /** Runs an instant query (for test assertions and waits). */
  query(promql: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  stop(): Promise<void>;
}

/** Path of the prometheus binary, built on first use. */
export function ensurePrometheus(): string {
  componentUsed('prometheus');
  const path = runBuildScript('../prometheus/build.sh', [], { quiet: true });
  if (!existsSync(path))
    throw new Error(`test/prometheus/build.sh printed ${JSON.stringify(path)}, which does not exist`);
  return path;
}

/** Starts Prometheus scraping `targets` (host:port on loopback) every second, as job `kpromo-test`. */
export async function startPrometheus(o: { targets: string[] }): Promise<Prometheus> {
  const bin = ensurePrometheus();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'kpromo-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  // JSON is YAML.
  writeFileSync(
    config,
    JSON.stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      scrape_configs: [{ job_name: 'kpromo-test', static_configs: [{ targets: o.targets }] }],
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const logFile = join(dir, 'prometheus.log');
  const server = await startChildServer({
    name: 'prometheus',
    bin,
    args: [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // Without builtinassets the UI is read from disk; the tests use the API only.
      '--web.enable-lifecycle',
    ],
    logFile,
    ready: async () => (await fetch(`${url}/-/ready`)).ok,
    timeoutMs: 60_000,
    pollMs: 200,
  });
  const query: Prometheus['query'] = async (promql) => {
    const res = await fetch(`${url}/api/v1/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ query: promql }).toString(),
    });
    const body = (await res.json()) as { status: string; error?: string; data?: { result: never[] } };
    if (body.status !== 'success') throw new Error(`Prometheus query ${promql} failed: ${body.error}`);
    return body.data?.result ?? [];
  };
  return {
    url,
    logFile,
    query,
    stop: server.stop,
    waitForTargets: async (timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const up = await query('up{job="kpromo-test"} == 1').catch(() => []);
        if (up.length >= o.targets.length) return;
        if (Date.now() > deadline)
          throw new Error(
            `Prometheus scraped ${up.length}/${o.targets.length} targets within ${timeoutMs} ms; see ${logFile}`,
          );
        await new Promise((r) => setTimeout(r, 250));
      }
    },
  };
}

/**
 * A metrics endpoint in the Prometheus text format whose numbers the test sets: counters the test
 * advances by rate (per second, from a timer), labelled as a sample app's requests would be.
 */
export interface MetricsEndpoint {
  /** host:port to scrape. */
  target: string;
  /**
   * Serves http_requests_total{app,version,code} growing at `rps` per second, of which `errorRatio`
   * answer code 500 and the rest 200 (replaces an earlier setting for the same app and version).
   */
  setTraffic(app: string, version: string, rps: number, errorRatio: number): void;
  close(): Promise<void>;
}

export async function startMetricsEndpoint(): Promise<MetricsEndpoint> {
  const traffic = new Map<
    string,
    { app: string; version: string; rps: number; errorRatio: number; ok: number; err: number }
  >();
  let last = Date.now();
  const advance = () => {
    const now = Date.now();
    const dt = (now - last) / 1000;
    last = now;
    for (const t of traffic.values()) {
      t.ok += t.rps * (1 - t.errorRatio) * dt;
      t.err += t.rps * t.errorRatio * dt;
    }
  };
  const server: Server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    advance();
    const lines = ['# HELP http_requests_total Requests served.', '# TYPE http_requests_total counter'];
    for (const t of traffic.values()) {
      lines.push(`http_requests_total{app="${t.app}",version="${t.version}",code="200"} ${t.ok.toFixed(3)}`);
      lines.push(`http_requests_total{app="${t.app}",version="${t.version}",code="500"} ${t.err.toFixed(3)}`);
    }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(`${lines.join('\n')}\n`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    target: `127.0.0.1:${port}`,
    setTraffic(app, version, rps, errorRatio) {
      advance();
      const key = `${app}/${version}`;
      const t = traffic.get(key) ?? { app, version, rps, errorRatio, ok: 0, err: 0 };
      t.rps = rps;
      t.errorRatio = errorRatio;
      traffic.set(key, t);
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
