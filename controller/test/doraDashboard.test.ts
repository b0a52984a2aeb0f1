import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { metricsRegistry } from '../src/observability/metrics.js';

const DASHBOARD = new URL('../../examples/observability/kpromo-dora.json', import.meta.url);

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: Array<{ refId: string; expr: string }>;
}

/** PromQL functions, aggregations and keywords the dashboard may use (anything else is a metric name). */
const PROMQL = new Set(['sum', 'avg', 'max', 'min', 'count', 'rate', 'increase', 'by', 'without']);

/** The metric names a PromQL expression selects: identifiers outside label matchers, groupings and ranges that are not functions. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/"[^"]*"/g, ' ');
  return [...bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)].map((m) => m[0]).filter((w) => !PROMQL.has(w));
}

describe('Grafana dashboard examples/observability/kpromo-dora.json', () => {
  const doc = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    title: string;
    uid: string;
    schemaVersion: number;
    panels: Panel[];
    templating: { list: Array<{ name: string; definition?: string }> };
  };

  it('is dashboard JSON Grafana imports: schema version, panels with ids, positions and queries', () => {
    expect(doc.title).toMatch(/DORA/);
    expect(doc.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    expect(Number.isInteger(doc.schemaVersion) && doc.schemaVersion >= 36).toBe(true);
    expect(doc.panels.length).toBeGreaterThanOrEqual(4);
    expect(new Set(doc.panels.map((p) => p.id)).size).toBe(doc.panels.length);
    for (const p of doc.panels) {
      expect(['stat', 'timeseries']).toContain(p.type);
      expect(p.gridPos.w).toBeGreaterThan(0);
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      expect(p.targets?.length, `${p.title} has a query`).toBeGreaterThan(0);
    }
  });

  it('queries only metrics the controller registers, and shows each of the four keys', async () => {
    const registered = new Set(metricsRegistry.getMetricsAsArray().map((m) => m.name));
    // Counters are exposed as <name> (prom-client names them with _total already).
    const exprs = [
      ...doc.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
      // label_values(<metric>, <label>): the metric only.
      ...doc.templating.list.flatMap((v) => {
        const m = /^label_values\(([^,]+),/.exec(v.definition ?? '');
        return m ? [m[1]] : [];
      }),
    ];
    expect(exprs.length).toBeGreaterThan(doc.panels.length);
    const used = new Set(exprs.flatMap(metricNames));
    expect([...used].filter((n) => !registered.has(n))).toEqual([]);
    for (const key of [
      'kpromo_dora_deployment_frequency_per_day',
      'kpromo_dora_lead_time_seconds',
      'kpromo_dora_change_failure_ratio',
      'kpromo_dora_time_to_restore_seconds',
      'kpromo_deployments_total',
    ])
      expect(used).toContain(key);
  });

  it('reads metric names out of PromQL (the check above can fail)', () => {
    expect(metricNames('sum by (env) (rate(foo_total{a="b"}[5m])) / bar')).toEqual(['foo_total', 'bar']);
  });
});
