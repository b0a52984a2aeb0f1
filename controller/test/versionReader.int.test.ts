// Versions kept between answers (versionReader) over the live cache, against a real apiserver and
// kwok: a Deployment's image change, seen by the cache's informer, must reach the next answer, while
// the versions of applications whose workloads did not change are kept instead of being read again.
import type { Environment } from '@kpromo/api';
import { applyCrds, kubeConfigFor, waitFor } from '@kpromo/test-harness';
import { applyCr, applyDeployment, crs, deleteNs, ensureNs, waitReady } from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { versionReader } from '../src/candidates/versionReader.js';
import { ClusterClients } from '../src/kube/clusters.js';
import { LiveCache } from '../src/kube/liveCache.js';
import { DEPLOYMENT, resourcePath } from '../src/kube/paths.js';
import type { KubeRest } from '../src/kube/rest.js';
import { BUILTIN_WORKLOAD_KINDS } from '../src/rollout/registry.js';

const NS = `vr-${process.pid}`;
const APPS_NS = `${NS}-apps`;
const digest = (c: string) => `sha256:${c.repeat(64)}`;
let cache: LiveCache;
let dev: KubeRest;

beforeAll(async () => {
  const kubeconfig = inject('kubeconfig');
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  const clients = ClusterClients.fromFile(kubeconfig, 'dev', [
    { namespaces: [NS], contexts: ['dev'], kubeconfigSecrets: [], inCluster: false, targetNamespaces: [APPS_NS] },
  ]);
  dev = clients.control;
  await ensureNs(dev, NS);
  await ensureNs(dev, APPS_NS);
  await applyCr(
    dev,
    crs.environment(NS, 'dev', {
      context: 'dev',
      namespace: APPS_NS,
      registry: { host: '127.0.0.1:5000', insecure: true },
      delivery: { method: 'patch' },
    }),
  );
  for (const name of ['cart', 'search']) {
    await applyCr(dev, crs.application(NS, name, 'team-a'));
    await applyDeployment(dev, APPS_NS, name, `127.0.0.1:5000/shop/${name}:v1.0.0@${digest('a')}`);
  }
  cache = new LiveCache(clients, [NS], { workloadKinds: BUILTIN_WORKLOAD_KINDS });
  await cache.start(AbortSignal.timeout(60_000));
  await waitFor('applications and environment cached', async () => {
    const env = cache.getEnvironment(NS, 'dev');
    return cache.applications(NS).length === 2 && !!env && cache.environmentSynced(env);
  });
  for (const name of ['cart', 'search']) await waitReady(dev, APPS_NS, name);
  // Until the rollouts have settled (no Deployment event for 2 s), so only the test's change counts.
  const env = cache.getEnvironment(NS, 'dev') as Environment;
  await waitFor('Deployments settled', async () => {
    const { cursor } = cache.changedSince(env);
    await new Promise((r) => setTimeout(r, 2000));
    return cache.changedSince(env, cursor).applications?.length === 0;
  });
}, 600_000);

afterAll(async () => {
  cache?.stop();
  if (dev) for (const ns of [NS, APPS_NS]) await deleteNs(dev, ns);
});

describe('versionReader over the live cache', () => {
  it('follows a Deployment image change and keeps the version of the application that did not change', async () => {
    const env = cache.getEnvironment(NS, 'dev') as Environment;
    const [cart, search] = ['cart', 'search'].map((n) => cache.getApplication(NS, n)!);
    const first = versionReader(cache);
    expect(first(cart, env)).toMatchObject({ tag: 'v1.0.0', digest: digest('a') });
    const searchBefore = first(search, env);
    const cursor = cache.changedSince(env).cursor;

    await applyDeployment(dev, APPS_NS, 'cart', `127.0.0.1:5000/shop/cart:v1.1.0@${digest('b')}`);
    await waitFor('cart v1.1.0 read', async () => versionReader(cache)(cart, env).tag === 'v1.1.0');
    expect(versionReader(cache)(cart, env).digest).toBe(digest('b'));
    // What the cache reports as changed: cart's Deployment (its rollout by kwok too), not search's.
    const changed = cache.changedSince(env, cursor).applications?.map((a) => a.metadata.name);
    expect(changed).toContain('cart');
    expect(changed).not.toContain('search');
    expect(versionReader(cache)(search, env)).toBe(searchBefore);

    await dev.delete(resourcePath(DEPLOYMENT, APPS_NS, 'cart'));
    await waitFor('cart missing', async () => versionReader(cache)(cart, env).health === 'Missing');
  });
});
