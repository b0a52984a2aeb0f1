// @vitest-environment jsdom
import type { Entity } from '@backstage/catalog-model';
import { EntityProvider } from '@backstage/plugin-catalog-react';
import type { DoraKeys, DoraReport, HistoryEntry } from '@kpromo/plugin-promotions-react';
import { cleanup, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { EnvironmentPromotionsContent } from '../src/components/EntityPromotionsContent';
import { InsightsPage } from '../src/components/InsightsPage';
import { fakeApi } from './fixtures';
import { renderWith } from './render';

afterEach(cleanup);

const keys = (o: Partial<DoraKeys> = {}): DoraKeys => ({
  deployments: 5,
  deploymentFrequency: { perDay: 0.3, count: 3 },
  leadTime: { medianSeconds: 5400, samples: 2, unknown: 1 },
  changeFailureRate: { ratio: 0.6, failures: 3 },
  timeToRestore: { medianSeconds: 2700, samples: 2, unrestored: 1 },
  ...o,
});
const report: DoraReport = {
  window: { since: '2026-11-02T12:00:00Z', until: '2026-12-02T12:00:00Z', days: 30 },
  total: keys(),
  groups: [
    { namespace: 'shop', flow: 'main', team: 'payments', environment: 'prod', ...keys() },
    {
      namespace: 'shop',
      flow: 'main',
      team: 'payments',
      environment: 'stable',
      ...keys({ leadTime: { samples: 0, unknown: 2 }, changeFailureRate: { ratio: 0, failures: 0 } }),
    },
  ],
};
const entry = (o: Partial<HistoryEntry>): HistoryEntry => ({
  key: 'u1/checkout',
  namespace: 'shop',
  flow: 'main',
  application: 'checkout',
  environment: 'prod',
  action: 'promote',
  from: { tag: 'v1.2.0' },
  to: { tag: 'v1.3.0-20261202T1', digest: `sha256:${'b'.repeat(64)}` },
  approvedBy: ['alice'],
  finishedAt: '2026-12-02T10:00:00Z',
  durationSeconds: 150,
  result: 'Succeeded',
  deployed: true,
  plan: 'shop-prod-1',
  source: 'log',
  ...o,
});

describe('Insights page', () => {
  it('shows the four keys, a bar chart per key over the groups, and the release history', async () => {
    const api = fakeApi({
      getDora: async () => report,
      listHistory: async () => ({
        items: [
          entry({ key: 'u2/checkout', action: 'rollback', to: { tag: 'v1.2.0' }, plan: 'shop-prod-1-rollback' }),
          entry({ result: 'RolledBack' }),
        ],
        total: 2,
      }),
    });
    renderWith(<InsightsPage />, { api });
    expect((await screen.findByTestId('dora-leadTime')).textContent).toContain('1h 30m');
    expect(screen.getByTestId('dora-changeFailureRate').textContent).toContain('60%');
    expect(screen.getByTestId('dora-timeToRestore').textContent).toContain('45m 0s');
    const lead = screen.getByRole('img', { name: /^Lead time for changes:/ });
    expect(lead.getAttribute('aria-label')).toBe(
      'Lead time for changes: main · payments → prod: 1h 30m; main · payments → stable: unknown',
    );
    const timeline = await screen.findByRole('list', { name: 'Release history of everything' });
    expect(timeline.textContent).toContain('rollback to v1.2.0');
    expect(timeline.textContent).toContain('v1.2.0 → v1.3.0-20261202T1');
    expect(timeline.textContent).toContain('approved by alice');
    expect(api.calls.filter((c) => c.startsWith('getDora'))[0]).toBe('getDora({"window":"30d"})');
  });

  it('says there were no deployments instead of drawing empty charts', async () => {
    renderWith(<InsightsPage />, { api: fakeApi() });
    expect(await screen.findByText('No deployments in this window')).toBeTruthy();
    expect(screen.queryByTestId('dora-charts')).toBeNull();
    expect((await screen.findByTestId('history-empty')).textContent).toContain('No promotion or rollback');
  });
});

describe('environment page release history', () => {
  it('asks for the history of that environment and lists it without repeating the environment', async () => {
    const env: Entity = {
      apiVersion: 'backstage.io/v1alpha1',
      kind: 'Resource',
      metadata: {
        name: 'prod',
        namespace: 'default',
        annotations: { 'kpromo.dev/name': 'prod', 'kpromo.dev/namespace': 'shop' },
      },
      spec: { type: 'kpromo-environment', owner: 'platform' },
    };
    const api = fakeApi({
      listHistory: async () => ({ items: [entry({ result: 'Failed', reason: 'RolloutTimeout' })], total: 1 }),
    });
    renderWith(
      <EntityProvider entity={env}>
        <EnvironmentPromotionsContent />
      </EntityProvider>,
      { api },
    );
    const timeline = await screen.findByRole('list', { name: 'Release history of prod' });
    await waitFor(() => expect(timeline.textContent).toContain('RolloutTimeout'));
    expect(timeline.textContent).toContain('checkout');
    expect(api.calls).toContain('listHistory({"namespace":"shop","environment":"prod","limit":20})');
  });
});
