import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kubeConfigFor, waitFor } from '@kpromo/test-harness';
import { PortStandIn } from '@kpromo/test-harness/port';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ExporterConfig, loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { type RunningExporter, runExporter } from '../src/run.js';

// Port's published default mapping for its Kubernetes exporter (fixtures/port-k8s-exporter, vendored
// unchanged), loaded as a file the way the Go exporter takes it, run against real objects on the
// `dev` cluster into the spec-validating Port stand-in. The expected entities are computed here by
// hand from the mapping's meaning under gojq, independently of the exporter's jq code.

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures/port-k8s-exporter');
const suffix = Math.random().toString(36).slice(2, 7);
const NS = `pdx-${suffix}`;
const CLUSTER = `it-${suffix}`;
const log = createLogger(process.env.LOG_LEVEL ?? 'silent');

let port: PortStandIn;
let cfg: ExporterConfig;
let running: RunningExporter;
let kc: k8s.KubeConfig;
const saved: Record<string, string | undefined> = {};

type Obj = {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; creationTimestamp?: Date | string };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};
type Container = {
  name: string;
  image: string;
  resources?: { limits?: Record<string, unknown> };
  securityContext?: { privileged?: boolean };
};

/** RFC 3339 as the apiserver sends it (the client library turns it into a Date, with milliseconds). */
const ts = (t: Date | string | undefined) =>
  t === undefined ? null : (t instanceof Date ? t.toISOString() : t).replace(/\.000Z$/, 'Z');
const truthy = (v: unknown) => v !== null && v !== undefined && v !== false;

/** The `namespace` entity of Port's default mapping. */
function namespaceEntity(ns: Obj) {
  return {
    identifier: `${ns.metadata.name}-${CLUSTER}`,
    title: ns.metadata.name,
    properties: { creationTimestamp: ts(ns.metadata.creationTimestamp), labels: ns.metadata.labels ?? null },
    relations: { Cluster: CLUSTER },
  };
}

/** The `workload` entity of Port's default mapping for a Deployment, DaemonSet or StatefulSet. */
function workloadEntity(kind: 'Deployment' | 'DaemonSet' | 'StatefulSet', o: Obj) {
  const spec = o.spec as {
    replicas?: number;
    strategy?: { type?: string };
    template: { spec: { containers: Container[] } };
  };
  const containers = spec.template.spec.containers;
  const properties: Record<string, unknown> = {
    availableReplicas: (o.status as { availableReplicas?: number } | undefined)?.availableReplicas ?? null,
    containers: containers.map((c) => ({ name: c.name, image: c.image, resources: c.resources ?? null })),
    creationTimestamp: ts(o.metadata.creationTimestamp),
    // First output wins: the first container decides.
    hasLatest: containers[0].image.includes(':latest'),
    hasLimits: containers.every(
      (c) => c.resources !== undefined && truthy(c.resources.limits?.memory) && truthy(c.resources.limits?.cpu),
    ),
    hasPrivileged: containers.some((c) => truthy(c.securityContext?.privileged)),
    isHealthy:
      (spec.replicas ?? null) === ((o.status as { availableReplicas?: number } | undefined)?.availableReplicas ?? null)
        ? 'Healthy'
        : 'Unhealthy',
    kind,
    labels: o.metadata.labels ?? null,
    replicas: spec.replicas ?? null,
    strategyConfig: spec.strategy ?? {},
  };
  if (kind === 'Deployment') {
    properties.images = containers.map((c) => `${c.name}: ${c.image}`);
    properties.strategy = spec.strategy?.type ?? null;
  }
  return {
    identifier: `${o.metadata.name}-${kind}-${o.metadata.namespace}-${CLUSTER}`,
    title: o.metadata.name,
    ...(kind === 'Deployment' ? { icon: 'Deployment' } : {}),
    properties,
    relations: { Namespace: `${o.metadata.namespace}-${CLUSTER}` },
  };
}

/** What Port should hold for this test's namespace (and the cluster entity), from the live objects. */
async function expected(): Promise<Map<string, unknown>> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const out = new Map<string, unknown>();
  out.set(`cluster/${CLUSTER}`, { identifier: CLUSTER, title: CLUSTER, properties: {}, relations: {} });
  const ns = await core.readNamespace({ name: NS });
  const nsJson = JSON.parse(JSON.stringify(ns)) as Obj;
  out.set(`namespace/${NS}-${CLUSTER}`, namespaceEntity(nsJson));
  const lists: Array<['Deployment' | 'DaemonSet' | 'StatefulSet', Promise<{ items: unknown[] }>]> = [
    ['Deployment', apps.listNamespacedDeployment({ namespace: NS })],
    ['DaemonSet', apps.listNamespacedDaemonSet({ namespace: NS })],
    ['StatefulSet', apps.listNamespacedStatefulSet({ namespace: NS })],
  ];
  for (const [kind, p] of lists)
    for (const o of (await p).items) {
      // Through JSON, as the apiserver sends it (the client turns timestamps into Dates).
      const e = workloadEntity(kind, JSON.parse(JSON.stringify(o)) as Obj);
      out.set(`workload/${e.identifier}`, e);
    }
  return out;
}

function inPort(): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const c = port.entitiesOf('cluster').get(CLUSTER);
  if (c) out.set(`cluster/${CLUSTER}`, c);
  for (const bp of ['namespace', 'workload'])
    for (const [id, e] of port.entitiesOf(bp))
      if (id.endsWith(`${NS}-${CLUSTER}`) || id === `${NS}-${CLUSTER}`) out.set(`${bp}/${id}`, e);
  return out;
}

async function converged(what: string): Promise<void> {
  let last = '';
  // Key order is not part of an entity: compare canonical JSON.
  const canon = (v: unknown): string =>
    Array.isArray(v)
      ? `[${v.map(canon).join(',')}]`
      : v && typeof v === 'object'
        ? `{${Object.keys(v)
            .sort()
            .map((k) => `${JSON.stringify(k)}:${canon((v as Record<string, unknown>)[k])}`)
            .join(',')}}`
        : JSON.stringify(v);
  const sorted = (m: Map<string, unknown>) => canon([...m.entries()].sort(([a], [b]) => a.localeCompare(b)));
  await waitFor(
    what,
    async () => {
      const want = sorted(await expected());
      const got = sorted(inPort());
      last = `\nwant ${want}\ngot  ${got}`;
      return want === got;
    },
    60_000,
  ).catch((e) => {
    throw new Error(`${(e as Error).message}${last}`);
  });
  expect(port.violations).toEqual([]);
}

const container = (name: string, image: string, limits = true): k8s.V1Container => ({
  name,
  image,
  ...(limits ? { resources: { limits: { cpu: '100m', memory: '64Mi' } } } : {}),
});
const podTemplate = (app: string, containers: k8s.V1Container[]): k8s.V1PodTemplateSpec => ({
  metadata: { labels: { app } },
  spec: { containers },
});

describe("Port's default exporter mapping, unchanged, against the dev cluster", () => {
  beforeAll(async () => {
    kc = kubeConfigFor('dev', inject('kubeconfig'));
    port = new PortStandIn();
    await port.start();
    // The blueprints the Go exporter creates at install (assets/defaults/blueprints.json).
    for (const bp of JSON.parse(readFileSync(join(FIXTURES, 'blueprints.json'), 'utf8')) as Array<{
      identifier: string;
    }>)
      port.blueprints.set(bp.identifier, bp);
    // The Go exporter's environment: credentials, base URL and CLUSTER_NAME come from variables.
    for (const [k, v] of Object.entries({
      CLUSTER_NAME: CLUSTER,
      PORT_CLIENT_ID: port.clientId,
      PORT_CLIENT_SECRET: port.clientSecret,
      PORT_BASE_URL: port.url,
    })) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    cfg = await loadConfig(join(FIXTURES, 'appConfig.yaml'));
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    await core.createNamespace({ body: { metadata: { name: NS, labels: { team: 'payments', tier: 'gold' } } } });
    await apps.createNamespacedDeployment({
      namespace: NS,
      body: {
        metadata: { name: 'web', labels: { app: 'web' } },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: podTemplate('web', [container('nginx', 'nginx:1.27'), container('sidecar', 'envoy:latest', false)]),
        },
      },
    });
    await apps.createNamespacedDaemonSet({
      namespace: NS,
      body: {
        metadata: { name: 'agent' },
        spec: {
          selector: { matchLabels: { app: 'agent' } },
          template: podTemplate('agent', [
            { ...container('agent', 'agent:latest'), securityContext: { privileged: true } },
          ]),
        },
      },
    });
    await apps.createNamespacedStatefulSet({
      namespace: NS,
      body: {
        metadata: { name: 'db' },
        spec: {
          replicas: 1,
          serviceName: 'db',
          selector: { matchLabels: { app: 'db' } },
          template: podTemplate('db', [container('postgres', 'postgres:16')]),
        },
      },
    });
    // Port's file has no `clusters`: one cluster, the current context (here: dev).
    running = runExporter(cfg, log, [{ name: cfg.clusters[0].name, kc }]);
  });

  afterAll(async () => {
    running?.stop();
    await port?.stop();
    await kc
      ?.makeApiClient(k8s.CoreV1Api)
      .deleteNamespace({ name: NS })
      .catch(() => undefined);
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('reads the file as a port-k8s-exporter config', () => {
    expect(cfg).toMatchObject({
      dialect: 'port-k8s-exporter',
      stateKey: 'my-k8s-exporter',
      createMissingRelatedEntities: true,
      includeDefaults: false,
      warnings: [],
    });
  });

  it('exports namespaces, the cluster and workloads exactly as the mapping means them', async () => {
    await converged('initial sync');
    // env.CLUSTER_NAME resolved (the bug this replaces produced "web-Deployment-<ns>-").
    expect(port.entitiesOf('workload').get(`web-Deployment-${NS}-${CLUSTER}`)?.relations).toEqual({
      Namespace: `${NS}-${CLUSTER}`,
    });
    // kube-* namespaces are filtered out by the selector; kube-system yields the cluster entity.
    expect([...port.entitiesOf('namespace').keys()].some((id) => id.startsWith('kube-'))).toBe(false);
    // Upserts as Port's exporter sends them, with datasource ownership.
    const upserts = port.calls.filter((c) => c.path.endsWith('/entities/bulk'));
    expect(upserts.length).toBeGreaterThan(0);
    for (const c of upserts)
      expect(c.query).toEqual({ upsert: 'true', merge: 'true', create_missing_related_entities: 'true' });
    expect(port.datasources.get(`namespace\u0000${NS}-${CLUSTER}`)).toMatch(/\(statekey\/my-k8s-exporter\)$/);
    expect(port.blueprints.get('workload')).not.toHaveProperty('schema.properties.kpromoExporterStateKey');
  });

  it('follows scaling, label changes and deletes', async () => {
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    await apps.patchNamespacedDeployment(
      { namespace: NS, name: 'web', body: { spec: { replicas: 3 }, metadata: { labels: { app: 'web', v: '2' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await apps.deleteNamespacedStatefulSet({ namespace: NS, name: 'db' });
    await converged('after scale and delete');
    expect(port.entitiesOf('workload').has(`db-StatefulSet-${NS}-${CLUSTER}`)).toBe(false);
  });

  it("resync deletes stale entities of this state key, Port's exporter's included, and nothing else", async () => {
    const plant = (id: string, datasource: string) => {
      port.entitiesOf('workload').set(id, { identifier: id, properties: {}, relations: {} });
      port.datasources.set(`workload\u0000${id}`, datasource);
    };
    plant(`gone-Deployment-${NS}-${CLUSTER}`, 'port-k8s-exporter/^0.3.4 (statekey/my-k8s-exporter)');
    plant(`other-Deployment-${NS}-${CLUSTER}`, 'port-k8s-exporter/^0.3.4 (statekey/another-exporter)');
    const r = await running.resync();
    expect(r.skipped).toBeUndefined();
    expect(port.entitiesOf('workload').has(`gone-Deployment-${NS}-${CLUSTER}`)).toBe(false);
    expect(port.entitiesOf('workload').has(`other-Deployment-${NS}-${CLUSTER}`)).toBe(true);
    port.entitiesOf('workload').delete(`other-Deployment-${NS}-${CLUSTER}`);
    await converged('after resync');
  });
});
