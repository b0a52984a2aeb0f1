// @vitest-environment jsdom
import type { Entity } from '@backstage/catalog-model';
import { EntityProvider } from '@backstage/plugin-catalog-react';
import { cleanup, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { EntityPromotionsContent } from '../src/components/EntityPromotionsContent';
import { applications, approvedPlan, fakeApi, plan } from './fixtures';
import { renderWith } from './render';

afterEach(cleanup);

const entity = (annotations: Record<string, string>, name = 'dev.shop.checkout'): Entity => ({
  apiVersion: 'backstage.io/v1alpha1',
  kind: 'Component',
  metadata: { name, namespace: 'default', annotations },
  spec: { type: 'service', owner: 'payments', lifecycle: 'production' },
});

describe('EntityPromotionsContent', () => {
  it('shows the versions across environments, the rollout in progress and the last promotions', async () => {
    const running = approvedPlan({
      phase: 'Promoting',
      apps: [{ application: 'checkout', phase: 'RollingOut', targetTag: 'v1.3.0-20261202T1' }],
    });
    const old = {
      ...approvedPlan({ phase: 'Complete', apps: [{ application: 'checkout', phase: 'Succeeded' }] }),
      metadata: { name: 'older', namespace: 'shop', creationTimestamp: '2026-11-01T00:00:00Z' },
    };
    // Not approved yet (status.gate says so): listed as Pending, never as the rollout in progress.
    const waiting = {
      ...plan({}, { phase: 'Pending', gate: { approved: false, required: 1, waitingFor: '1 more approval' } }),
      metadata: { name: 'waiting', namespace: 'shop', creationTimestamp: '2026-10-01T00:00:00Z' },
    };
    const other = { ...plan({ candidates: [] }), metadata: { name: 'not-mine', namespace: 'shop' } };
    renderWith(
      <EntityProvider entity={entity({ 'kpromo.dev/name': 'checkout', 'kpromo.dev/namespace': 'shop' })}>
        <EntityPromotionsContent />
      </EntityProvider>,
      { api: fakeApi({ listPlans: async () => [waiting, old, running, other] }) },
    );
    const versions = await screen.findByTestId('entity-versions');
    // tag, health, drift and the short digest (readable without hovering) per environment
    expect(versions.textContent).toBe(
      'devv1.3.0Healthysha256:bbbbbbbbbbbbstablev1.2.0Healthydriftsha256:aaaaaaaaaaaaprodv1.2.0Degradedsha256:aaaaaaaaaaaa1/2 replicas',
    );
    expect(screen.getByTestId('rollout-state').textContent).toBe(
      'Rollout: shop-prod-1 is promoting to prod — RollingOut',
    );
    // react-aria tables render their rows a tick after the rest
    const rows = (await screen.findAllByRole('row')).map((r) => r.textContent);
    expect(rows.slice(1).map((r) => r?.split('stable')[0])).toEqual(['shop-prod-1', 'older', 'waiting']);
    expect(rows[3]).toMatch(/Pending/);
    // The record: who approved (the signature state and signed record appear when the stage has them).
    expect(rows[1]).toMatch(/approved by user:default\/alice$/);
    expect(rows.join()).not.toContain('not-mine');
  });

  it('badges an environment that runs what kpromo did not deliver, saying what and who wrote it', async () => {
    const drifted = {
      ...applications[0],
      drift: [
        {
          environment: 'prod',
          expected: { tag: 'v1.2.0', digest: `sha256:${'a'.repeat(64)}`, plan: 'shop-prod-1' },
          found: { tag: 'v1.1.9', digest: `sha256:${'9'.repeat(64)}` },
          since: '2026-12-01T10:00:00Z',
          changedBy: 'kubectl-patch',
        },
      ],
    };
    renderWith(
      <EntityProvider entity={entity({ 'kpromo.dev/name': 'checkout', 'kpromo.dev/namespace': 'shop' })}>
        <EntityPromotionsContent />
      </EntityProvider>,
      { api: fakeApi({ listApplications: async () => [drifted, applications[1]] }) },
    );
    await screen.findByTestId('entity-versions');
    const badges = screen.getAllByTestId('changed-outside');
    expect(badges).toHaveLength(1);
    expect(badges[0].textContent).toBe('changed outside kpromo');
    expect(badges[0].getAttribute('title')).toBe(
      'Changed outside kpromo: runs v1.1.9, not v1.2.0 that plan shop-prod-1 delivered, since 2026-12-01T10:00:00Z; image last written by kubectl-patch (a client, not a person)',
    );
  });

  it('says how to link the entity when it is no kpromo Application', async () => {
    renderWith(
      <EntityProvider entity={entity({}, 'billing')}>
        <EntityPromotionsContent />
      </EntityProvider>,
      { api: fakeApi() },
    );
    expect(await screen.findByText('billing is not a kpromo Application')).toBeTruthy();
    expect(screen.getByTestId('empty-state').textContent).toContain('kpromo.dev/name');
  });
});
