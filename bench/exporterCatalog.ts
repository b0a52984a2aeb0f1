/**
 * Catalog side of the exporter benchmark: N Applications across two clusters into a real Backstage
 * backend (catalog plugin, in-memory SQLite) through the promotions module. Prints the time until
 * the provider's first full mutation and until every entity is served by the catalog API.
 *
 *   yarn tsx bench/exporterCatalog.ts [--n 2000] [--clusters dev,stable]
 */
import { parseArgs } from 'node:util';
import { mockCredentials } from '@backstage/backend-test-utils';
import catalogBackend from '@backstage/plugin-catalog-backend';
import { DEFAULT_BLUEPRINTS, DEFAULT_RESOURCES } from '@kpromo/exporter';
import { catalogModulePromotions } from '@kpromo/plugin-catalog-backend-module-promotions';
import { defaultKubeconfigPath, kubeConfigFor } from '@kpromo/test-harness';
import { startBackstageTestBackend } from '@kpromo/test-harness/backstage';
import * as k8s from '@kubernetes/client-node';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { n: { type: 'string', default: '2000' }, clusters: { type: 'string', default: 'dev,stable' } },
  });
  const N = Number(values.n);
  const CLUSTERS = values.clusters!.split(',');
  const NS = `exp-benchbs-${Math.random().toString(36).slice(2, 7)}`;
  const kubeconfig = process.env.KUBECONFIG ?? defaultKubeconfigPath();
  const kcs = Object.fromEntries(CLUSTERS.map((c) => [c, kubeConfigFor(c, kubeconfig)]));
  const apis = Object.fromEntries(CLUSTERS.map((c) => [c, kcs[c].makeApiClient(k8s.CustomObjectsApi)]));
  console.log(`creating ${N} Applications in ${NS} across ${CLUSTERS.join(', ')}…`);
  for (const c of CLUSTERS)
    await kcs[c].makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
  let next = 0;
  await Promise.all(
    Array.from({ length: 24 }, async () => {
      while (next < N) {
        const i = next++;
        const cluster = CLUSTERS[i % CLUSTERS.length];
        const name = `app-${i}`;
        await apis[cluster].createNamespacedCustomObject({
          group: 'promotions.kpromo.dev',
          version: 'v1alpha1',
          namespace: NS,
          plural: 'applications',
          body: {
            apiVersion: 'promotions.kpromo.dev/v1alpha1',
            kind: 'Application',
            metadata: { name, namespace: NS },
            spec: {
              owner: 'team-bench',
              image: { repository: `bench/${name}` },
              workloads: [{ kind: 'Deployment', name }],
            },
          },
        });
      }
    }),
  );
  const selector = { query: `.metadata.namespace == "${NS}"` };
  const start = Date.now();
  const { backend, base } = await startBackstageTestBackend({
    features: [catalogBackend, catalogModulePromotions],
    config: {
      catalog: { processingInterval: { seconds: 5 } },
      kpromo: JSON.parse(
        JSON.stringify({
          catalog: { fullSyncSeconds: 3600 },
          exporter: {
            stateKey: NS,
            clusters: CLUSTERS.map((name) => ({ name, context: name, kubeconfig })),
            includeDefaults: false,
            resources: DEFAULT_RESOURCES.map((r) => ({ ...r, selector })),
            blueprints: DEFAULT_BLUEPRINTS,
          },
        }),
      ),
    },
  });
  const count = async () => {
    const res = await fetch(
      `${base}/api/catalog/entities/by-query?filter=kind=component,metadata.annotations.kpromo.dev/cluster&limit=1`,
      {
        headers: { Authorization: mockCredentials.user.header() },
      },
    );
    return ((await res.json()) as { totalItems: number }).totalItems;
  };
  let peakRss = 0;
  for (;;) {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    if ((await count()) >= N) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  console.log(
    `catalog: ${N} entities served ${((Date.now() - start) / 1000).toFixed(1)} s after backend start; peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB (backend + module + harness in one process)`,
  );
  await backend.stop();
  for (const c of CLUSTERS)
    await kcs[c]
      .makeApiClient(k8s.CoreV1Api)
      .deleteNamespace({ name: NS })
      .catch(() => undefined);
  process.exit(0);
}

void main();
