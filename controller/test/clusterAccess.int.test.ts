import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Environment } from '@kpromo/api';
import { waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  controllerConfig,
  crs,
  deleteNs,
  ensureNs,
  restFor,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import { createLogger } from '../src/observability/logger.js';
import { type Running, startController } from '../src/runtime.js';

// Environments in ALLOWED may use context prod; in REFUSED only dev. The prod context of the
// controller's kubeconfig goes through a TCP proxy that counts connections: a refused Environment
// must not cause a single one.
const run = Math.random().toString(36).slice(2, 7);
const ALLOWED = `ctl-ca-ok-${run}`;
const REFUSED = `ctl-ca-no-${run}`;
const APPS = `ctl-ca-apps-${run}`;
/** Another team's namespace in the same prod cluster. */
const OTHER_TEAM = `ctl-ca-other-team-${run}`;
const kubeconfig = inject('kubeconfig');
const dev = restFor(kubeconfig, 'dev');
const prod = restFor(kubeconfig, 'prod');
let ctl: Running;
let proxy: Server;
const sockets = new Set<Socket>();
let prodConnections = 0;

const envPath = (ns: string, name: string) => resourcePath(KPROMO_TYPES.Environment, ns, name);
const ready = async (ns: string, name: string) =>
  (await dev.get<Environment>(envPath(ns, name))).status?.conditions?.find((c) => c.type === 'Ready');

beforeAll(async () => {
  for (const ns of [ALLOWED, REFUSED]) await ensureNs(dev, ns);
  await ensureNs(dev, APPS);
  await ensureNs(prod, APPS);
  await applyDeployment(prod, APPS, 'web', 'registry.local/shop/web:v1');
  await ensureNs(prod, OTHER_TEAM);
  await applyDeployment(prod, OTHER_TEAM, 'payments', 'registry.local/other/payments:v1');

  // A copy of the kubeconfig whose prod cluster is reached through the counting proxy.
  const kc = parse(readFileSync(kubeconfig, 'utf8')) as {
    clusters: Array<{ name: string; cluster: { server: string } }>;
  };
  const prodCluster = kc.clusters.find((c) => c.name === 'prod')!.cluster;
  const upstream = new URL(prodCluster.server);
  proxy = createServer((client) => {
    prodConnections++;
    sockets.add(client);
    const up = connect(Number(upstream.port), upstream.hostname);
    sockets.add(up);
    client.pipe(up).pipe(client);
    const end = () => {
      client.destroy();
      up.destroy();
    };
    client.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const port = (proxy.address() as { port: number }).port;
  prodCluster.server = `https://127.0.0.1:${port}`;
  const file = join(mkdtempSync(join(tmpdir(), 'kpromo-ca-')), 'kubeconfig');
  writeFileSync(file, stringify(kc));

  const cfg = controllerConfig(file, ALLOWED, {
    namespaces: [ALLOWED, REFUSED],
    leaderElection: { enabled: false },
    clusterAccess: [
      { namespaces: [ALLOWED], contexts: ['prod'], targetNamespaces: [APPS] },
      { namespaces: [REFUSED], contexts: ['dev'], targetNamespaces: [APPS] },
    ],
  });
  ctl = await startController(cfg, { log: createLogger({ level: process.env.CTL_TEST_LOG ?? 'silent' }) });
});

afterAll(async () => {
  await ctl?.stop();
  for (const s of sockets) s.destroy();
  proxy?.close();
  for (const ns of [ALLOWED, REFUSED]) await deleteNs(dev, ns);
  await deleteNs(dev, APPS);
  await deleteNs(prod, APPS);
  await deleteNs(prod, OTHER_TEAM);
});

const env = (ns: string, name: string, context: string, displayName?: string, target = APPS) => {
  const e = crs.environment(ns, name, {
    context,
    namespace: target,
    registry: { host: '127.0.0.1:1', insecure: true },
    delivery: { method: 'patch' },
  });
  return displayName ? { ...e, spec: { ...e.spec, displayName } } : e;
};

describe('cluster access allow-list (controller config clusterAccess)', () => {
  it('refuses an Environment whose namespace may not use context prod, without contacting prod', async () => {
    await applyCr(dev, env(REFUSED, 'sneaky', 'prod'));
    await applyCr(dev, env(REFUSED, 'fine', 'dev')); // the same namespace may use what it is allowed
    const c = await waitFor('sneaky refused', async () => {
      const r = await ready(REFUSED, 'sneaky');
      return r?.reason === 'ClusterNotAllowed' ? r : undefined;
    });
    expect(c.status).toBe('False');
    expect(c.message).toBe(
      `Environment ${REFUSED}/sneaky may not use kubeconfig context "prod": the controller config key clusterAccess has no entry allowing namespace ${REFUSED} to; add "prod" to clusterAccess[].contexts of an entry whose namespaces match "${REFUSED}"`,
    );
    await waitFor('fine synced', async () => (await ready(REFUSED, 'fine'))?.reason === 'Synced');
    expect(prodConnections).toBe(0);
  });

  it('an allowed namespace reaches prod through the same context; the refused one still cannot read it', async () => {
    await applyCr(dev, env(ALLOWED, 'prod', 'prod'));
    await waitFor('allowed prod synced', async () => (await ready(ALLOWED, 'prod'))?.reason === 'Synced', 60_000);
    expect(prodConnections).toBeGreaterThan(0); // the proxy is the way to prod

    // Both Environments name the same cluster+namespace (one shared watch); the refused one gets
    // nothing from it, and an update re-checks it with the watch running.
    const cache = ctl.controller.cache;
    const allowed = cache.getEnvironment(ALLOWED, 'prod')!;
    await waitFor('web in the cache', async () => cache.getWorkload(allowed, 'Deployment', 'web'));
    await applyCr(dev, env(REFUSED, 'sneaky', 'prod', 'second try'));
    const gen = (await dev.get<Environment>(envPath(REFUSED, 'sneaky'))).metadata.generation;
    await waitFor(
      'sneaky re-checked',
      async () => (await dev.get<Environment>(envPath(REFUSED, 'sneaky'))).status?.observedGeneration === gen,
    );
    expect(await ready(REFUSED, 'sneaky')).toMatchObject({ status: 'False', reason: 'ClusterNotAllowed' });
    const sneaky = cache.getEnvironment(REFUSED, 'sneaky')!;
    expect(cache.getWorkload(sneaky, 'Deployment', 'web')).toBeUndefined();
    expect(cache.environmentSynced(sneaky)).toBe(false);
    await expect(ctl.controller.cache.waitForEnvironment(sneaky)).rejects.toThrow(
      /may not use kubeconfig context "prod"/,
    );
  });

  it("a team allowed into the prod cluster points an Environment at another team's namespace there: refused (targetNamespaces), nothing of it is watched", async () => {
    await applyCr(dev, env(ALLOWED, 'trespass', 'prod', undefined, OTHER_TEAM));
    const c = await waitFor('trespass refused', async () => {
      const r = await ready(ALLOWED, 'trespass');
      return r?.reason === 'ClusterNotAllowed' ? r : undefined;
    });
    expect(c.message).toBe(
      `Environment ${ALLOWED}/trespass may not deliver into namespace "${OTHER_TEAM}" of kubeconfig context "prod": no clusterAccess entry for namespace ${ALLOWED} that allows that cluster lists "${OTHER_TEAM}" in targetNamespaces (without targetNamespaces only "${ALLOWED}" is allowed); add "${OTHER_TEAM}" to clusterAccess[].targetNamespaces of an entry whose namespaces match "${ALLOWED}" and that allows kubeconfig context "prod"`,
    );
    const cache = ctl.controller.cache;
    const trespass = cache.getEnvironment(ALLOWED, 'trespass')!;
    expect(cache.getWorkload(trespass, 'Deployment', 'payments')).toBeUndefined();
    expect(cache.environmentSynced(trespass)).toBe(false);
    await expect(cache.waitForEnvironment(trespass)).rejects.toThrow(/may not deliver into namespace/);
  });
});
