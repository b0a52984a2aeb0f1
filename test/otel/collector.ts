import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { componentUsed } from '../cluster/need.js';
import { runBuildScript } from '../cluster/paths.js';
import { startChildServer } from '../cluster/proc.js';
import { freePort } from '../registry/registry.js';

/**
 * A real OpenTelemetry Collector (built from Go modules by test/otel/build.sh: the OTLP receiver
 * and the contrib file exporter) on loopback: OTLP/HTTP in, every batch of spans appended to a file
 * as OTLP JSON, one line per export. What tests read to check the spans a process sent.
 */
export interface Collector {
  /** OTLP/HTTP base URL (what `tracing.otlpEndpoint` / OTEL_EXPORTER_OTLP_ENDPOINT take). */
  endpoint: string;
  /** The spans received so far, flattened with their resource's service.name. */
  spans(): CollectedSpan[];
  logFile: string;
  stop(): Promise<void>;
}

export interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, string | number | boolean>;
  events: Array<{ name: string; attributes: Record<string, string | number | boolean> }>;
  status: { code?: number; message?: string };
}

/** Path of the collector binary, built on first use (about a minute after the modules are downloaded). */
export function ensureCollector(): string {
  componentUsed('otel');
  const path = runBuildScript('../otel/build.sh', [], { quiet: true });
  if (!existsSync(path)) throw new Error(`test/otel/build.sh printed ${JSON.stringify(path)}, which does not exist`);
  return path;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
const otlpValue = (v: OtlpValue) =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue ?? '';
const attrs = (list: Array<{ key: string; value: OtlpValue }> = []) =>
  Object.fromEntries(list.map((a) => [a.key, otlpValue(a.value)]));

/** Pure: the spans of the file exporter's OTLP JSON lines. */
export function parseOtlpJsonLines(text: string): CollectedSpan[] {
  const out: CollectedSpan[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const doc = JSON.parse(line) as {
      resourceSpans?: Array<{
        resource?: { attributes?: Array<{ key: string; value: OtlpValue }> };
        scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
      }>;
    };
    for (const rs of doc.resourceSpans ?? []) {
      const service = String(attrs(rs.resource?.attributes)['service.name'] ?? '');
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? [])
          out.push({
            service,
            traceId: String(s.traceId ?? ''),
            spanId: String(s.spanId ?? ''),
            parentSpanId: String(s.parentSpanId ?? ''),
            name: String(s.name ?? ''),
            attributes: attrs(s.attributes as Array<{ key: string; value: OtlpValue }>),
            events: (
              (s.events ?? []) as Array<{ name: string; attributes?: Array<{ key: string; value: OtlpValue }> }>
            ).map((e) => ({ name: e.name, attributes: attrs(e.attributes) })),
            status: (s.status ?? {}) as CollectedSpan['status'],
          });
    }
  }
  return out;
}

/** Starts the collector on a free loopback port; resolves once it accepts OTLP/HTTP. */
export async function startCollector(): Promise<Collector> {
  const bin = ensureCollector();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'kpromo-otelcol-'));
  const spansFile = join(dir, 'spans.jsonl');
  const config = join(dir, 'config.yaml');
  // JSON is YAML: the collector's file provider reads it.
  writeFileSync(
    config,
    JSON.stringify({
      receivers: { otlp: { protocols: { http: { endpoint: `127.0.0.1:${port}` } } } },
      exporters: { file: { path: spansFile, format: 'json', flush_interval: '100ms' } },
      service: {
        pipelines: { traces: { receivers: ['otlp'], exporters: ['file'] } },
        telemetry: { metrics: { level: 'none' } },
      },
    }),
  );
  const logFile = join(dir, 'otelcol.log');
  const endpoint = `http://127.0.0.1:${port}`;
  const server = await startChildServer({
    name: 'otelcol',
    bin,
    args: ['--config', `file:${config}`],
    logFile,
    // An empty OTLP/JSON export: 200 once the receiver listens.
    ready: async () =>
      (
        await fetch(`${endpoint}/v1/traces`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"resourceSpans":[]}',
        })
      ).ok,
    timeoutMs: 60_000,
    pollMs: 200,
  });
  return {
    endpoint,
    logFile,
    spans: () => (existsSync(spansFile) ? parseOtlpJsonLines(readFileSync(spansFile, 'utf8')) : []),
    stop: server.stop,
  };
}
