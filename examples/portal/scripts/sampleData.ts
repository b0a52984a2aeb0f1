// Sample release for the portal on the local clusters (same story as `yarn demo`): a `shop` flow
// dev -> stable -> prod, 4 apps; dev runs v1.1.0, stable and prod v1.0.0. Own namespace and registry
// ports, so it does not disturb `yarn demo` or the test suites.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { API_VERSION } from '@kpromo/api';
import {
  applyCrds,
  applyManifest,
  ensureClusters,
  ensureNamespace,
  kubeConfigFor,
  pushTestImage,
  startRegistry,
  stateDir,
  waitFor,
} from '@kpromo/test-harness';
import * as k8s from '@kubernetes/client-node';

export const APPS = ['checkout', 'cart', 'search', 'ledger'];

export async function setUpSampleRelease(opts: {
  namespace: string;
  registryPort: number;
  /** Backstage user refs allowed to use the MCP tools (Kubernetes RBAC in the namespace). */
  users: string[];
  log: (m: string) => void;
}) {
  const NS = opts.namespace;
  const cp = await ensureClusters({ log: (m) => opts.log(`  ${m}`) });
  const dir = join(stateDir(), '..', 'portal', NS);
  mkdirSync(dir, { recursive: true });
  const devRegistry = await startRegistry({
    port: opts.registryPort,
    storage: join(dir, 'registry-dev'),
    name: 'portal-registry-dev',
  });
  const releaseRegistry = await startRegistry({
    port: opts.registryPort + 1,
    storage: join(dir, 'registry-release'),
    name: 'portal-registry-release',
  });
  const control = kubeConfigFor('dev', cp.kubeconfigPath);
  await applyCrds(control);
  for (const c of cp.clusters) {
    const core = kubeConfigFor(c.name, cp.kubeconfigPath).makeApiClient(k8s.CoreV1Api);
    await core.deleteNamespace({ name: NS }).catch(() => undefined);
    await waitFor(
      `namespace ${NS} deleted in ${c.name}`,
      () =>
        core.readNamespace({ name: NS }).then(
          () => false,
          () => true,
        ),
      120_000,
      500,
    );
    await ensureNamespace(kubeConfigFor(c.name, cp.kubeconfigPath), NS);
  }
  // The MCP tools run as the Backstage user (the promotions backend's proxy impersonates it), and the
  // controller checks Kubernetes RBAC for that user: let the portal's users manage promotions here.
  await applyManifest(control, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'kpromo-portal-promoter' },
    rules: [
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['applications', 'environments', 'promotionflows', 'promotionplans', 'notifications'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'],
      },
    ],
  } as k8s.V1ClusterRole);
  await applyManifest(control, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'kpromo-portal-users', namespace: NS },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kpromo-portal-promoter' },
    subjects: opts.users.map((name) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name })),
  } as k8s.V1RoleBinding);
  const envs = [
    { name: 'dev', host: devRegistry.host, prefix: undefined, tier: 'development' },
    { name: 'stable', host: releaseRegistry.host, prefix: 'stable', tier: 'staging' },
    { name: 'prod', host: releaseRegistry.host, prefix: 'prod', tier: 'production' },
  ] as const;
  for (const e of envs) {
    await applyManifest(control, {
      apiVersion: API_VERSION,
      kind: 'Environment',
      metadata: { name: e.name, namespace: NS },
      spec: {
        tier: e.tier,
        cluster: { context: e.name },
        namespace: NS,
        registry: { host: e.host, insecure: true, ...(e.prefix ? { prefix: e.prefix } : {}) },
        delivery: { method: 'patch' },
      },
    });
  }
  await applyManifest(control, {
    apiVersion: API_VERSION,
    kind: 'PromotionFlow',
    metadata: { name: 'shop', namespace: NS },
    spec: {
      stages: [{ environment: 'dev' }, { environment: 'stable' }, { environment: 'prod' }],
      approval: 'manual',
      tagPattern: '^v\\d+\\.\\d+\\.\\d+',
      concurrency: 4,
      rolloutTimeoutSeconds: 120,
    },
  });
  for (const app of APPS) {
    await applyManifest(control, {
      apiVersion: API_VERSION,
      kind: 'Application',
      metadata: { name: app, namespace: NS },
      spec: {
        owner: app === 'ledger' ? 'team-payments' : 'team-shop',
        system: 'shop',
        image: { repository: `shop/${app}` },
        workloads: [{ kind: 'Deployment', name: app }],
        healthChecks: [{ name: 'rollout', type: 'workloadReady' }],
      },
    });
    for (const e of envs) {
      const version = e.name === 'dev' ? 'v1.1.0' : 'v1.0.0';
      const repo = `${e.prefix ? `${e.prefix}/` : ''}shop/${app}`;
      const { digest } = await pushTestImage({
        host: e.host,
        repository: repo,
        tag: version,
        seed: `${app}-${version}`,
      });
      await applyManifest(kubeConfigFor(e.name, cp.kubeconfigPath), {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: app, namespace: NS, labels: { app } },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app } },
          template: {
            metadata: { labels: { app } },
            spec: { containers: [{ name: 'app', image: `${e.host}/${repo}:${version}@${digest}` }] },
          },
        },
      } as k8s.V1Deployment);
    }
  }
  for (const e of envs) {
    const appsApi = kubeConfigFor(e.name, cp.kubeconfigPath).makeApiClient(k8s.AppsV1Api);
    for (const app of APPS) {
      await waitFor(
        `${e.name}/${NS}/${app} Ready`,
        async () => {
          const d = await appsApi.readNamespacedDeployment({ name: app, namespace: NS });
          const s = d.status;
          return (
            s?.observedGeneration === d.metadata?.generation &&
            s?.updatedReplicas === 2 &&
            s?.availableReplicas === 2 &&
            !s?.unavailableReplicas
          );
        },
        120_000,
      );
    }
  }
  return {
    kubeconfigPath: cp.kubeconfigPath,
    stop: async () => {
      await devRegistry.stop();
      await releaseRegistry.stop();
    },
  };
}
