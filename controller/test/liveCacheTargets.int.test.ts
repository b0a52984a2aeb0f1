// The cache's workload-side start for an Environment, against a real apiserver with the Argo Rollouts
// CRD installed: a caller waiting for an Environment while its start is already in flight (the
// Environment informer starts it, the CLI or API then waits) must see the Rollout informer that the
// CRD adds, not only the built-in kinds. Before the start was shared, the second caller returned at
// once, waited for Deployments and StatefulSets only, and read Rollouts as missing.
import type { Environment } from '@kpromo/api';
import {
  ensureArgoRolloutsBinaries,
  installArgoRolloutsCrds,
  kubeConfigFor,
  needComponents,
} from '@kpromo/test-harness';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ClusterClients } from '../src/kube/clusters.js';
import { LiveCache } from '../src/kube/liveCache.js';
import { BUILTIN_WORKLOAD_KINDS } from '../src/rollout/registry.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('argo');

const NS = `lc-targets-${process.pid}`;
let cache: LiveCache;

beforeAll(async () => {
  const kubeconfig = inject('kubeconfig');
  await installArgoRolloutsCrds(kubeConfigFor('dev', kubeconfig), ensureArgoRolloutsBinaries().crds);
  const clients = ClusterClients.fromFile(kubeconfig, 'dev', [
    { namespaces: [NS], contexts: ['dev'], kubeconfigSecrets: [], inCluster: false, targetNamespaces: [`${NS}-*`] },
  ]);
  cache = new LiveCache(clients, [NS], { workloadKinds: BUILTIN_WORKLOAD_KINDS });
}, 1_200_000);

afterAll(() => cache?.stop());

describe('LiveCache environment start', () => {
  it('a wait that begins while the start is in flight includes the CRD-backed Rollout informer', async () => {
    const env = {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'Environment',
      metadata: { name: 'dev', namespace: NS },
      spec: {
        cluster: { context: 'dev' },
        namespace: `${NS}-apps`,
        registry: { host: '127.0.0.1:5000' },
        delivery: { method: 'patch' },
      },
    } as unknown as Environment;
    // What the Environment informer does on its first event, not awaited.
    void cache.ensureTarget(env);
    await cache.waitForEnvironment(env, AbortSignal.timeout(60_000));
    expect(cache.environmentState(env).workloadKinds).toContain('Rollout');
    expect(cache.environmentSynced(env)).toBe(true);
  });

  // A fleet has no target of its own: `kpromo apps` on the demo's fleet prod said "cluster unreachable".
  it('a wait for a fleet Environment waits for each of its clusters', async () => {
    const fleet = {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'Environment',
      metadata: { name: 'prod', namespace: NS },
      spec: {
        namespace: `${NS}-main`,
        registry: { host: '127.0.0.1:5000' },
        delivery: { method: 'patch' },
        clusters: [
          { name: 'canary', cluster: { context: 'dev' }, namespace: `${NS}-canary` },
          { name: 'main', cluster: { context: 'dev' } },
        ],
      },
    } as unknown as Environment;
    await cache.waitForEnvironment(fleet, AbortSignal.timeout(60_000));
    expect(cache.environmentSynced(fleet)).toBe(true);
    expect(cache.environmentState(fleet).workloadKinds).toContain('Deployment');
  });
});
