// The sample `shop` release used by `yarn demo` and `yarn portal` on the local clusters: a flow
// dev -> stable -> prod and 4 apps; dev runs v1.1.0, stable and prod v1.0.0, each pinned by digest in
// two real OCI registries. Each caller picks its own namespace and registry ports so they never
// disturb each other or the test suites. With `fleet`, prod is a fleet Environment of two entries
// (the demo's story, scripts/demo.ts).
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { API_VERSION } from '@kpromo/api';
import * as k8s from '@kubernetes/client-node';
import { ensureClusters } from './cluster/controlPlane.js';
import { stateDir } from './cluster/paths.js';
import { kubeConfigFor, waitFor } from './kube.js';
import { applyCrds, applyManifest, ensureNamespace } from './manifests.js';
import { pushTestImage } from './registry/pushImage.js';
import { startRegistry } from './registry/registry.js';

export const APPS = ['checkout', 'cart', 'search', 'ledger'];

export async function setUpSampleRelease(opts: {
  namespace: string;
  /**
   * dev registry on this port, the release registry (stable, prod) on the next one; 0: each on a
   * free port of its own (tests running side by side must not name fixed ports).
   */
  registryPort: number;
  /** Users (e.g. Backstage user refs) allowed to manage promotions here through Kubernetes RBAC. */
  users?: string[];
  /** Names the registries' storage folder and processes ("demo", "portal"). */
  label: string;
  log: (m: string) => void;
  /**
   * prod as a fleet of two entries on the local prod cluster: `prod-canary` (namespace
   * `<namespace>-canary`) and `prod-main` (the namespace itself), as two clusters would be.
   */
  fleet?: boolean;
  /** Empty registries first: no image, signature or tag of an earlier run is found again. */
  fresh?: boolean;
}) {
  const NS = opts.namespace;
  const cp = await ensureClusters({ log: (m) => opts.log(`  ${m}`) });
  const dir = join(stateDir(), '..', opts.label, NS);
  mkdirSync(dir, { recursive: true });
  if (opts.fresh)
    for (const r of ['registry-dev', 'registry-release'])
      rmSync(join(dir, r, 'data'), { recursive: true, force: true });
  const devRegistry = await startRegistry({
    port: opts.registryPort || undefined,
    storage: join(dir, 'registry-dev'),
    name: `${opts.label}-registry-dev`,
  });
  const releaseRegistry = await startRegistry({
    port: opts.registryPort ? opts.registryPort + 1 : undefined,
    storage: join(dir, 'registry-release'),
    name: `${opts.label}-registry-release`,
  });
  opts.log(`registries: dev ${devRegistry.host}, release ${releaseRegistry.host}`);
  const control = kubeConfigFor('dev', cp.kubeconfigPath);
  await applyCrds(control);
  const fleet = opts.fleet ? FLEET(NS) : undefined;
  // Each namespace is deleted and created again side by side: a deletion waits for the
  // controller-manager's namespace cleanup, seconds each.
  const resets = cp.clusters.flatMap((c) =>
    (c.name === 'prod' && fleet ? fleet.map((f) => f.namespace) : [NS]).map((n) => ({ cluster: c.name, n })),
  );
  await Promise.all(
    resets.map(async ({ cluster, n }) => {
      const core = kubeConfigFor(cluster, cp.kubeconfigPath).makeApiClient(k8s.CoreV1Api);
      await core.deleteNamespace({ name: n }).catch(() => undefined);
      await waitFor(
        `namespace ${n} deleted in ${cluster}`,
        () =>
          core.readNamespace({ name: n }).then(
            () => false,
            () => true,
          ),
        120_000,
        500,
      );
      await ensureNamespace(kubeConfigFor(cluster, cp.kubeconfigPath), n);
    }),
  );
  // MCP tools run as the calling user (the portal's proxy impersonates the Backstage user) and the
  // controller checks Kubernetes RBAC for that user: let the given users manage promotions here.
  if (opts.users?.length) await grantPromoters(control, NS, opts.users);
  opts.log(`deploying ${APPS.length} apps (dev runs v1.1.0, stable and prod run v1.0.0)…`);
  const devDigests = await deploySampleRelease(
    control,
    cp.kubeconfigPath,
    NS,
    devRegistry.host,
    releaseRegistry.host,
    fleet,
  );
  return {
    kubeconfigPath: cp.kubeconfigPath,
    clusters: cp.clusters,
    registries: { dev: devRegistry.host, release: releaseRegistry.host },
    /** Each app's v1.1.0 digest in the dev registry. */
    devDigests,
    /** The fleet entries of prod (with `fleet`): entry name and namespace on the prod cluster. */
    fleet,
    stop: async () => {
      await devRegistry.stop();
      await releaseRegistry.stop();
    },
  };
}

/** The demo's prod fleet: two entries on the one local prod cluster, each in its own namespace. */
export const FLEET = (ns: string) => [
  { name: 'prod-canary', namespace: `${ns}-canary`, labels: { ring: 'canary' } },
  { name: 'prod-main', namespace: ns, labels: { ring: 'main' } },
];

async function grantPromoters(control: k8s.KubeConfig, NS: string, users: string[]) {
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
      // kpromo's own verbs: approving plans (namespace-wide here), rolling back, overriding freezes.
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['promotionplans'],
        verbs: ['approve', 'rollback', 'override-freeze'],
      },
    ],
  } as k8s.V1ClusterRole);
  await applyManifest(control, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'kpromo-portal-users', namespace: NS },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kpromo-portal-promoter' },
    subjects: users.map((name) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name })),
  } as k8s.V1RoleBinding);
}

async function deploySampleRelease(
  control: k8s.KubeConfig,
  kubeconfigPath: string,
  NS: string,
  devHost: string,
  releaseHost: string,
  fleet?: ReturnType<typeof FLEET>,
): Promise<Record<string, string>> {
  const envs = [
    { name: 'dev', host: devHost, prefix: undefined, tier: 'development' },
    { name: 'stable', host: releaseHost, prefix: 'stable', tier: 'staging' },
    { name: 'prod', host: releaseHost, prefix: 'prod', tier: 'production' },
  ] as const;
  const namespacesOf = (env: string) => (env === 'prod' && fleet ? fleet.map((f) => f.namespace) : [NS]);
  const devDigests: Record<string, string> = {};
  for (const e of envs) {
    await applyManifest(control, {
      apiVersion: API_VERSION,
      kind: 'Environment',
      metadata: { name: e.name, namespace: NS },
      spec: {
        tier: e.tier,
        // A fleet lists its entries instead of one cluster (the schema refuses both).
        ...(e.name === 'prod' && fleet
          ? {
              clusters: fleet.map((f) => ({
                name: f.name,
                cluster: { context: 'prod' },
                namespace: f.namespace,
                labels: f.labels,
              })),
            }
          : { cluster: { context: e.name } }),
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
      if (e.name === 'dev') devDigests[app] = digest;
      for (const namespace of namespacesOf(e.name))
        await applyManifest(kubeConfigFor(e.name, kubeconfigPath), {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: app, namespace, labels: { app } },
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
    const appsApi = kubeConfigFor(e.name, kubeconfigPath).makeApiClient(k8s.AppsV1Api);
    for (const app of APPS)
      for (const namespace of namespacesOf(e.name))
        await waitFor(
          `${e.name}/${namespace}/${app} Ready`,
          async () => {
            const d = await appsApi.readNamespacedDeployment({ name: app, namespace });
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
  return devDigests;
}
