import { mockCredentials, type TestBackend } from '@backstage/backend-test-utils';
import catalogBackend from '@backstage/plugin-catalog-backend';
import { kubeConfigFor, waitFor } from '@kpromo/test-harness';
import { startBackstageTestBackend } from '@kpromo/test-harness/backstage';
import { app, crs, deleteNamespace, ensureKpromoCrds, ensureNamespace, env } from '@kpromo/test-harness/crs';
import type * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { catalogModulePromotions } from '../src/module.js';
import { ANNOTATION } from '../src/toBackstageEntity.js';

// A real Backstage backend (catalog plugin, in-memory SQLite) with this module, watching the real clusters.
const NS = `exp-bs-${Math.random().toString(36).slice(2, 7)}`;
const CLUSTERS = ['dev', 'stable'];
const kcs: Record<string, k8s.KubeConfig> = {};
let backend: TestBackend;
let base = '';

type CatalogEntity = { metadata: { annotations: Record<string, string> }; spec: Record<string, unknown> };

async function getEntity(kind: string, name: string): Promise<CatalogEntity | undefined> {
  const res = await fetch(`${base}/api/catalog/entities/by-name/${kind}/default/${name}`, {
    headers: { Authorization: mockCredentials.user.header() },
  });
  if (res.status === 404) return undefined;
  if (!res.ok) throw new Error(`catalog answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as CatalogEntity;
}

describe('catalog module against the real clusters', () => {
  beforeAll(async () => {
    const kubeconfig = inject('kubeconfig');
    for (const c of CLUSTERS) {
      kcs[c] = kubeConfigFor(c, kubeconfig);
      await ensureKpromoCrds(kcs[c]);
      await ensureNamespace(kcs[c], NS);
    }
    const dev = crs(kcs.dev, NS);
    await dev.create('environments', env('dev'));
    await dev.create('applications', app('checkout', 'team-a', ['dev']));
    await crs(kcs.stable, NS).create('applications', app('checkout', 'team-b'));
    const onlyNs = { query: `.metadata.namespace == "${NS}"` };
    ({ backend, base } = await startBackstageTestBackend({
      features: [catalogBackend, catalogModulePromotions],
      config: {
        catalog: { processingInterval: { seconds: 1 } },
        kpromo: JSON.parse(
          JSON.stringify({
            // The same Application on two clusters: fully qualified names keep them apart.
            catalog: { fullSyncSeconds: 3600, entityNames: 'qualified' },
            exporter: {
              stateKey: NS,
              clusters: CLUSTERS.map((name) => ({ name, context: name, kubeconfig })),
              includeDefaults: false,
              // The defaults, restricted to this test's namespace.
              resources: (await import('@kpromo/exporter')).DEFAULT_RESOURCES.map((r) => ({
                ...r,
                selector: onlyNs,
              })),
              blueprints: (await import('@kpromo/exporter')).DEFAULT_BLUEPRINTS,
            },
          }),
        ),
      },
    }));
  });

  afterAll(async () => {
    await backend?.stop();
    for (const c of CLUSTERS) if (kcs[c]) await deleteNamespace(kcs[c], NS);
  });

  it('provides CRs as catalog entities with annotations pointing back to the CR', async () => {
    const name = `dev.${NS}.checkout`;
    const e = await waitFor('checkout in the catalog', () => getEntity('component', name), 90_000);
    expect(e.spec).toMatchObject({
      type: 'service',
      owner: 'group:default/team-a',
      lifecycle: 'production',
      dependsOn: [`resource:default/dev.${NS}.dev`],
    });
    expect(e.metadata.annotations).toMatchObject({
      [ANNOTATION.cluster]: 'dev',
      [ANNOTATION.namespace]: NS,
      [ANNOTATION.kind]: 'Application',
      [ANNOTATION.name]: 'checkout',
      'backstage.io/kubernetes-id': 'checkout',
      'backstage.io/kubernetes-namespace': NS,
    });
    const other = await waitFor('stable checkout', () => getEntity('component', `stable.${NS}.checkout`), 60_000);
    expect(other.spec.owner).toBe('group:default/team-b');
    const envEntity = await waitFor('environment resource', () => getEntity('resource', `dev.${NS}.dev`), 60_000);
    expect(envEntity.spec.type).toBe('kpromo-environment');
  });

  it('applies watch events as deltas: new CRs appear, updates land, deleted CRs leave the catalog', async () => {
    const dev = crs(kcs.dev, NS);
    await dev.create('applications', app('cart', 'team-c'));
    await waitFor('cart added', () => getEntity('component', `dev.${NS}.cart`), 60_000);
    await dev.patch('applications', 'cart', { spec: { owner: 'team-d' } });
    await waitFor(
      'cart owner updated',
      async () => (await getEntity('component', `dev.${NS}.cart`))?.spec.owner === 'group:default/team-d',
      60_000,
    );
    await dev.delete('applications', 'cart');
    await waitFor('cart removed', async () => !(await getEntity('component', `dev.${NS}.cart`)), 60_000);
    expect(await getEntity('component', `dev.${NS}.checkout`)).toBeDefined();
  });
});
