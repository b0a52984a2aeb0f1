// @vitest-environment jsdom
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { PipelinePage } from '../src/components/PipelinePage';
import { PlanView } from '../src/components/PlanView';
import { approvedPlan, bigFleetPlan, environments, fakeApi, fleetEnvironment, fleetPlan } from './fixtures';
import { renderWith } from './render';

afterEach(cleanup);

const UID = '6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11';
const marks = (grid: HTMLElement) => Array.from(grid.querySelectorAll<HTMLElement>('[role="img"]'));
/** The column headers of a header row of the grid (0: waves, 1: clusters); the rows are found without a role query over 1500 cells. */
const headerRow = (grid: HTMLElement, i: number) =>
  within(grid.querySelectorAll<HTMLElement>('thead tr')[i]!).getAllByRole('columnheader');
const clusterHeaders = (grid: HTMLElement) => headerRow(grid, 1).map((th) => th.textContent);

describe('fleet plan view', () => {
  it('lists the waves and every application in every cluster, grouped by wave', async () => {
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => fleetPlan() }),
      permission: 'allow',
    });
    await screen.findByTestId('plan-waves');
    // One row per wave: phase, clusters succeeded/failed, budget, message, soak and pause.
    expect(screen.getByTestId('wave-phase-canary').textContent).toBe('Succeeded');
    expect(screen.getByTestId('wave-phase-eu').textContent).toBe('Waiting');
    expect(screen.getByTestId('wave-phase-rest').textContent).toBe('Pending');
    expect(screen.getByTestId('wave-counts-canary').textContent).toBe('1/2 succeeded · 1 failed');
    expect(screen.getByTestId('wave-counts-eu').textContent).toBe('0/2 succeeded · 0 failed');
    expect(screen.getByTestId('wave-budget-canary').textContent).toBe('1 cluster may fail');
    expect(screen.getByTestId('wave-budget-rest').textContent).toBe('no cluster may fail');
    expect(screen.getByTestId('wave-details-canary').textContent).toBe(
      'Soaked until 2026-12-02 10:25:00 UTCThe next wave waits for a continuation',
    );
    expect(screen.getByTestId('wave-details-eu').textContent).toContain(
      'waiting for someone with the RBAC verb continue to let it start',
    );

    // The grid: clusters as columns in wave order under their wave, one mark per app and cluster.
    const grid = screen.getByTestId('fleet-grid');
    expect(clusterHeaders(grid)).toEqual([
      'prod-eu-1',
      'prod-eu-2',
      'prod-eu-3',
      'prod-eu-4',
      'prod-us-1',
      'prod-us-2',
    ]);
    const waves = headerRow(grid, 0);
    expect(waves.map((th) => [th.textContent, th.getAttribute('colspan')])).toEqual([
      ['Application', null],
      ['canary', '2'],
      ['eu', '2'],
      ['rest', '2'],
    ]);
    expect(marks(grid)).toHaveLength(12);
    expect(within(grid).getByRole('img', { name: 'checkout in prod-eu-1: Succeeded' }).dataset.tone).toBe('success');
    const failed = within(grid).getByRole('img', { name: 'cart in prod-eu-2: Failed' });
    expect(failed.dataset.tone).toBe('danger');
    expect(failed.getAttribute('title')).toBe(
      'cart in prod-eu-2: Failed – RolloutTimeout: deployment cart not ready after 300s (wave canary)',
    );
    // rest has not started: no per-cluster entries yet, its cells are Pending.
    expect(within(grid).getByRole('img', { name: 'cart in prod-us-2: Pending' })).toBeTruthy();
    // Full cluster names on hover.
    expect(within(grid).getByRole('columnheader', { name: 'prod-us-2' }).getAttribute('title')).toBe('prod-us-2');
    expect(screen.getByTestId('fleet-summary').textContent).toBe(
      '2 applications × 6 clusters · 1 failed · 0 in flight',
    );
  });

  it('"Only problems" hides succeeded and pending cells and keeps failed and in-flight ones', async () => {
    const p = fleetPlan({ eu: { phase: 'Promoting', message: undefined } });
    p.status!.targets![2]!.apps[0] = { application: 'checkout', phase: 'RollingOut' };
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => p }),
      permission: 'allow',
    });
    const grid = await screen.findByTestId('fleet-grid');
    expect(marks(grid).filter((m) => m.dataset.phase === 'Succeeded')).toHaveLength(3);
    fireEvent.click(screen.getByRole('switch', { name: 'Only problems' }));
    await waitFor(() =>
      expect(marks(screen.getByTestId('fleet-grid')).map((m) => m.getAttribute('aria-label'))).toEqual([
        'checkout in prod-eu-3: RollingOut',
        'cart in prod-eu-2: Failed',
      ]),
    );
    const filtered = screen.getByTestId('fleet-grid');
    // Only the clusters and applications with a problem stay.
    expect(clusterHeaders(filtered)).toEqual(['prod-eu-2', 'prod-eu-3']);
    expect(within(filtered).queryByRole('img', { name: /: Succeeded$/ })).toBeNull();
    expect(within(filtered).queryByRole('img', { name: /: Pending$/ })).toBeNull();
    fireEvent.click(screen.getByRole('switch', { name: 'Only problems' }));
    await waitFor(() => expect(marks(screen.getByTestId('fleet-grid'))).toHaveLength(12));
  });

  it('says so when "Only problems" leaves nothing', async () => {
    const p = fleetPlan();
    p.status!.targets![1]!.apps[1] = { application: 'cart', phase: 'Succeeded' };
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => p }),
      permission: 'allow',
    });
    await screen.findByTestId('fleet-grid');
    fireEvent.click(screen.getByRole('switch', { name: 'Only problems' }));
    expect((await screen.findByTestId('fleet-no-problems')).textContent).toBe(
      'No application failed or is in flight in any cluster.',
    );
    expect(screen.queryByTestId('fleet-grid')).toBeNull();
  });

  it('offers "Continue wave" on the waiting wave, confirms, and posts the wave and the plan uid', async () => {
    let current = fleetPlan();
    const api = fakeApi({
      getPlan: async () => current,
      continuePlan: async () => {
        current = fleetPlan({ eu: { phase: 'Promoting', message: undefined, continuedBy: 'user:default/alice' } });
        return current;
      },
    });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, { api, permission: 'allow' });
    const button = await screen.findByRole('button', { name: 'Continue wave eu' });
    // Only the waiting wave has one.
    expect(screen.queryByRole('button', { name: 'Continue wave canary' })).toBeNull();
    expect(screen.queryByRole('button', { name: 'Continue wave rest' })).toBeNull();
    fireEvent.click(button);
    const dialog = await screen.findByRole('dialog');
    expect(
      within(dialog).getByText(/starts promoting the 2 clusters of wave eu in prod: prod-eu-3, prod-eu-4/),
    ).toBeTruthy();
    expect(within(dialog).getByTestId('continue-earlier-waves').textContent).toBe(
      'Wave canary: Succeeded, 1/2 succeeded, 1 failed',
    );
    expect(api.calls.some((c) => c.startsWith('continuePlan'))).toBe(false);
    fireEvent.click(within(dialog).getByRole('button', { name: 'Continue wave eu' }));
    await waitFor(() => expect(api.calls).toContain(`continuePlan("shop","shop-prod-1",{"wave":"eu","uid":"${UID}"})`));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    // The answer shows at once: eu runs, continued by alice; no button any more.
    await waitFor(() => expect(screen.getByTestId('wave-phase-eu').textContent).toBe('Promoting'));
    expect(screen.getByTestId('wave-details-eu').textContent).toBe('Continued by alice');
    expect(screen.queryByRole('button', { name: /^Continue wave/ })).toBeNull();
  });

  it('shows a refused continuation in the dialog, as a refused approval', async () => {
    const api = fakeApi({
      getPlan: async () => fleetPlan(),
      continuePlan: async () => {
        throw new Error('user:default/alice may not continue plans into prod (HTTP 403)');
      },
    });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, { api, permission: 'allow' });
    fireEvent.click(await screen.findByRole('button', { name: 'Continue wave eu' }));
    const dialog = await screen.findByRole('dialog');
    fireEvent.change(within(dialog).getByRole('textbox', { name: 'Comment' }), { target: { value: ' canary fine ' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Continue wave eu' }));
    expect(await within(dialog).findByText('The request failed')).toBeTruthy();
    expect(within(dialog).getByText('user:default/alice may not continue plans into prod (HTTP 403)')).toBeTruthy();
    expect(api.calls).toContain(
      `continuePlan("shop","shop-prod-1",{"wave":"eu","comment":"canary fine","uid":"${UID}"})`,
    );
    expect(screen.getByRole('dialog')).toBeTruthy();
  });

  it('hides "Continue wave" without promotion.continue, checked per application', async () => {
    const asked: string[] = [];
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => fleetPlan() }),
      permission: (name, ref) => {
        if (ref && name === 'promotion.continue') asked.push(ref);
        return name !== 'promotion.continue' || ref !== 'component:default/shop-cart';
      },
    });
    expect((await screen.findByTestId('wave-no-continue-eu')).textContent).toContain('promotion.continue');
    expect(asked.sort()).toEqual(['component:default/checkout', 'component:default/shop-cart']);
    expect(screen.queryByRole('button', { name: /^Continue wave/ })).toBeNull();
  });

  it('has no "Continue wave" when no wave waits, nor once a continuation waits for the controller', async () => {
    const running = fleetPlan({ eu: { phase: 'Promoting', message: undefined } });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => running }),
      permission: 'allow',
    });
    expect((await screen.findByTestId('wave-phase-eu')).textContent).toBe('Promoting');
    expect(screen.queryByRole('button', { name: /^Continue wave/ })).toBeNull();
    cleanup();

    const continued = fleetPlan();
    continued.spec.continuations = [{ wave: 'eu', user: 'user:default/bob', planUID: UID }];
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => continued }),
      permission: 'allow',
    });
    expect((await screen.findByTestId('wave-details-eu')).textContent).toContain(
      'Continued by bob; waiting for the controller to start it',
    );
    expect(screen.queryByRole('button', { name: /^Continue wave/ })).toBeNull();
  });

  it('shows no waves for a plan into one cluster', async () => {
    const asked = new Set<string>();
    const api = fakeApi({
      getPlan: async () =>
        approvedPlan({ phase: 'Promoting', apps: [{ application: 'checkout', phase: 'RollingOut' }] }),
    });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api,
      permission: (name) => {
        asked.add(name);
        return true;
      },
    });
    expect((await screen.findByTestId('phase-checkout')).textContent).toBe('RollingOut');
    expect(screen.queryByTestId('plan-waves')).toBeNull();
    expect(screen.queryByTestId('fleet-grid')).toBeNull();
    expect(screen.queryByText('Waves')).toBeNull();
    // Nobody asks about continuing a plan that has no waves.
    await waitFor(() => expect(asked.has('promotion.plan.approve')).toBe(true));
    expect(asked.has('promotion.continue')).toBe(false);
  });

  it('renders 50 clusters × 30 applications: 50 cluster columns, scrolling in its own box', async () => {
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => bigFleetPlan(50, 30) }),
      permission: 'allow',
    });
    const grid = await screen.findByTestId('fleet-grid');
    const headers = clusterHeaders(grid);
    expect(headers).toHaveLength(50);
    expect(new Set(headers).size).toBe(50);
    expect(marks(grid)).toHaveLength(1500);
    expect(grid.style.overflowX).toBe('auto');
    expect(grid.getAttribute('tabindex')).toBe('0');
    // Long names: rotated, whole in the title.
    const last = grid.querySelector<HTMLElement>('th[data-cluster="fleet-cluster-with-a-long-name-50"]')!;
    expect(last.getAttribute('title')).toBe('fleet-cluster-with-a-long-name-50');
    expect(grid.querySelector('[aria-label="app-01 in fleet-cluster-with-a-long-name-50: Failed"]')).toBeTruthy();
    expect(screen.getByTestId('fleet-summary').textContent).toBe(
      '30 applications × 50 clusters · 1 failed · 0 in flight',
    );
    fireEvent.click(screen.getByRole('switch', { name: 'Only problems' }));
    await waitFor(() => expect(marks(screen.getByTestId('fleet-grid'))).toHaveLength(1));
  });
});

describe('fleet environments in the pipeline', () => {
  it('shows the cluster count and, expanded or on hover, each cluster with its synced state', async () => {
    renderWith(<PipelinePage />, {
      api: fakeApi({
        listEnvironments: async () => [...environments.filter((e) => e.name !== 'prod'), fleetEnvironment],
      }),
      permission: 'allow',
    });
    const stage = await screen.findByTestId('stage-prod');
    const summary = within(stage).getByTestId('fleet-summary-prod');
    expect(summary.textContent).toBe('3 clusters · 1 not synced');
    expect(summary.getAttribute('title')).toBe('prod-eu-1: synced\nprod-eu-2: not synced\nprod-us-1: synced');
    fireEvent.click(summary);
    const list = within(stage).getByRole('list', { name: 'Clusters of prod' });
    expect(
      within(list)
        .getAllByRole('listitem')
        .map((li) => li.textContent),
    ).toEqual([
      'prod-eu-1syncedregion=eu · ring=canary',
      'prod-eu-2not syncedregion=eu',
      'prod-us-1syncednamespace shop-us · helmRelease · region=us',
    ]);
    // A one-cluster stage shows no cluster list.
    expect(within(screen.getByTestId('stage-stable')).queryByTestId('fleet-stable')).toBeNull();
  });
});
