// @vitest-environment jsdom
import type { ApplicationSummary, ApplicationsFilter, PromotionsApi } from '@kpromo/plugin-promotions-react';
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { filterGlobs, ReleasesPage } from '../src/components/ReleasesPage';
import { fakeApi, pageApplicationsInMemory } from './fixtures';
import { renderWith } from './render';

const render = (api = fakeApi()) => renderWith(<ReleasesPage />, { api });

afterEach(cleanup);

/** app-000 … app-(n-1), teams alternating, running v1.0.0 everywhere. */
const manyApps = (n: number): ApplicationSummary[] =>
  Array.from({ length: n }, (_, i) => {
    const name = `app-${String(i).padStart(3, '0')}`;
    return {
      namespace: 'shop',
      name,
      owner: i % 2 ? 'payments' : 'storefront',
      repository: `shop/${name}`,
      labels: {},
      entityRef: `component:default/${name}`,
      versions: ['dev', 'stable', 'prod'].map((environment) => ({ environment, tag: 'v1.0.0', health: 'Healthy' })),
    };
  });

type PageRequest = ApplicationsFilter & { limit: number; continue?: string };

/** GET /applications pages with opaque continue tokens (`opaque-<offset>`), as the controller's are to a client. */
const opaquePages =
  (apps: ApplicationSummary[]): NonNullable<PromotionsApi['listApplicationsPage']> =>
  async (f) => {
    const from = f.continue ? Number(f.continue.replace(/^opaque-/, '')) : 0;
    const page = pageApplicationsInMemory(apps, { ...f, continue: String(from) });
    return { ...page, continue: page.continue ? `opaque-${page.continue}` : undefined };
  };

/** The listApplicationsPage requests the page made, in order. */
const pageRequests = (api: { calls: string[] }): PageRequest[] =>
  api.calls
    .filter((c) => c.startsWith('listApplicationsPage('))
    .map((c) => JSON.parse(c.slice('listApplicationsPage('.length, -1)) as PageRequest);

/** The application of each row shown, in order (by their dev cells). */
const rowNames = () =>
  Array.from(
    screen.getByRole('grid', { name: 'Releases per environment' }).querySelectorAll('[data-testid$="-dev"]'),
  ).map((c) => (c.getAttribute('data-testid') ?? '').replace(/^cell-|-dev$/g, ''));

const range = () => screen.getByTestId('releases-range').textContent;
const button = (name: string) => screen.getByRole('button', { name }) as HTMLButtonElement;
const nameField = () => screen.getByRole('searchbox', { name: 'Application' });

describe('ReleasesPage', () => {
  it('shows environments as columns in promotion order, a version and health per cell, and drift', async () => {
    render();
    const table = await screen.findByRole('grid', { name: 'Releases per environment' });
    const headers = within(table)
      .getAllByRole('columnheader')
      .map((h) => h.textContent);
    expect(headers).toEqual(['Application', 'Team', 'dev (development)', 'stable (staging)', 'prod (production)']);

    const devCheckout = screen.getByTestId('cell-checkout-dev');
    expect(devCheckout.textContent).toContain('v1.3.0');
    expect(devCheckout.textContent).toContain('Healthy');
    // stable runs an older digest than dev: drift in stable, none in prod (same as stable)
    expect(within(screen.getByTestId('cell-checkout-stable')).getByTestId('drift')).toBeTruthy();
    expect(within(screen.getByTestId('cell-checkout-prod')).queryByTestId('drift')).toBeNull();
    expect(screen.getByTestId('cell-checkout-prod').textContent).toContain('Degraded');
    expect(screen.getByTestId('cell-cart-prod').textContent).toContain('not deployed');
    expect(within(screen.getByTestId('cell-cart-stable')).queryByTestId('drift')).toBeNull();
  });

  it('asks the server for the first page of 100, not for every application, and says how many match', async () => {
    const api = fakeApi({ listApplications: async () => manyApps(250) });
    render(api);
    await screen.findByRole('grid', { name: 'Releases per environment' });
    expect(pageRequests(api)).toEqual([{ limit: 100 }]);
    expect(api.calls.some((c) => c.startsWith('listApplications('))).toBe(false);
    expect(rowNames()).toHaveLength(100);
    expect(rowNames()[0]).toBe('app-000');
    expect(rowNames()[99]).toBe('app-099');
    expect(range()).toBe('Showing 1–100 of 250 applications');
    expect(button('Previous').disabled).toBe(true);
    expect(button('Next').disabled).toBe(false);
  });

  it('leaves the total out when the server does not count the matches', async () => {
    render(fakeApi({ listApplicationsPage: async (f) => ({ items: manyApps(250).slice(0, f.limit), continue: 'x' }) }));
    await screen.findByRole('grid', { name: 'Releases per environment' });
    expect(range()).toBe('Showing 1–100 applications');
  });

  it('pages forward with the continue token of the previous answer and back with the one before', async () => {
    const api = fakeApi({ listApplicationsPage: opaquePages(manyApps(250)) });
    render(api);
    await screen.findByRole('grid', { name: 'Releases per environment' });

    fireEvent.click(button('Next'));
    await waitFor(() => expect(range()).toBe('Showing 101–200 of 250 applications'));
    expect(pageRequests(api).at(-1)).toEqual({ limit: 100, continue: 'opaque-100' });
    expect(rowNames()[0]).toBe('app-100');

    fireEvent.click(button('Next'));
    await waitFor(() => expect(range()).toBe('Showing 201–250 of 250 applications'));
    expect(pageRequests(api).at(-1)).toEqual({ limit: 100, continue: 'opaque-200' });
    expect(rowNames()).toHaveLength(50);
    expect(button('Next').disabled).toBe(true);

    fireEvent.click(button('Previous'));
    await waitFor(() => expect(range()).toBe('Showing 101–200 of 250 applications'));
    expect(pageRequests(api).at(-1)).toEqual({ limit: 100, continue: 'opaque-100' });
    expect(rowNames()[0]).toBe('app-100');

    fireEvent.click(button('Previous'));
    await waitFor(() => expect(range()).toBe('Showing 1–100 of 250 applications'));
    expect(pageRequests(api).at(-1)).toEqual({ limit: 100 });
    expect(button('Previous').disabled).toBe(true);
  });

  it('reloads only the page shown (as the 10 s poll does)', async () => {
    const api = fakeApi({ listApplicationsPage: opaquePages(manyApps(250)) });
    render(api);
    await screen.findByRole('grid', { name: 'Releases per environment' });
    fireEvent.click(button('Next'));
    await waitFor(() => expect(range()).toBe('Showing 101–200 of 250 applications'));
    const before = pageRequests(api).length;
    fireEvent.click(button('Refresh'));
    await waitFor(() => expect(pageRequests(api).length).toBe(before + 1));
    expect(pageRequests(api).at(-1)).toEqual({ limit: 100, continue: 'opaque-100' });
  });

  it('filters by name on the server with a *text* glob once typing pauses, from the first page', async () => {
    const api = fakeApi({ listApplicationsPage: opaquePages(manyApps(250)) });
    render(api);
    await screen.findByRole('grid', { name: 'Releases per environment' });
    fireEvent.click(button('Next'));
    await waitFor(() => expect(range()).toBe('Showing 101–200 of 250 applications'));

    fireEvent.change(nameField(), { target: { value: 'APP-2' } });
    // debounced: nothing asked for while the user may still be typing
    expect(pageRequests(api).some((r) => r.applications)).toBe(false);
    await waitFor(() => expect(range()).toBe('Showing 1–50 of 50 applications'));
    const filtered = pageRequests(api).filter((r) => r.applications);
    // lowercased (Kubernetes names are), first page, and never the old position under the new filter
    expect(filtered).toEqual([{ limit: 100, applications: ['*app-2*'] }]);
    expect(rowNames()[0]).toBe('app-200');
    expect(button('Previous').disabled).toBe(true);
  });

  it('filters by team on the server', async () => {
    const api = fakeApi();
    render(api);
    await screen.findByTestId('cell-cart-dev');
    fireEvent.change(screen.getByRole('searchbox', { name: 'Team' }), { target: { value: 'pay' } });
    await waitFor(() => expect(screen.queryByTestId('cell-cart-dev')).toBeNull());
    expect(screen.getByTestId('cell-checkout-dev')).toBeTruthy();
    expect(pageRequests(api).at(-1)).toEqual({ limit: 100, teams: ['*pay*'] });
  });

  it('says when nothing matches the filter (not that there are no applications) and clears it', async () => {
    const api = fakeApi();
    render(api);
    await screen.findByTestId('cell-cart-dev');
    fireEvent.change(nameField(), { target: { value: 'nothing-like-this' } });
    expect((await screen.findByTestId('no-matches')).textContent).toMatch(/No applications match/);
    expect(screen.queryByText('No applications yet')).toBeNull();
    expect(screen.queryByRole('grid')).toBeNull();
    expect(pageRequests(api).at(-1)).toEqual({ limit: 100, applications: ['*nothing-like-this*'] });

    fireEvent.click(button('Clear the filters'));
    expect(await screen.findByTestId('cell-cart-dev')).toBeTruthy();
    expect((nameField() as HTMLInputElement).value).toBe('');
    expect(screen.queryByTestId('no-matches')).toBeNull();
  });

  it('pages client-side over listApplications when the API has no listApplicationsPage', async () => {
    const api = fakeApi({ listApplicationsPage: undefined, listApplications: async () => manyApps(150) });
    render(api);
    await screen.findByRole('grid', { name: 'Releases per environment' });
    expect(rowNames()).toHaveLength(100);
    expect(range()).toBe('Showing 1–100 of 150 applications');
    fireEvent.click(button('Next'));
    await waitFor(() => expect(range()).toBe('Showing 101–150 of 150 applications'));
    expect(rowNames()[0]).toBe('app-100');
  });

  it('turns filter text into the globs GET /applications takes', () => {
    expect(filterGlobs('')).toBeUndefined();
    expect(filterGlobs('  ')).toBeUndefined();
    expect(filterGlobs('Check', { lowercase: true })).toEqual(['*check*']);
    expect(filterGlobs('check*')).toEqual(['check*']);
    // a comma would split one glob in two on the server: each entry is a glob of its own
    expect(filterGlobs('cart, checkout')).toEqual(['*cart*', '*checkout*']);
  });

  it('says what to do when there are no environments', async () => {
    render(fakeApi({ listEnvironments: async () => [], listApplications: async () => [] }));
    expect(await screen.findByText('No environments yet')).toBeTruthy();
    expect(screen.getByTestId('empty-state').textContent).toMatch(/kubectl apply/);
  });

  it('says what to do when there are environments but no applications', async () => {
    render(fakeApi({ listApplications: async () => [] }));
    expect(await screen.findByText('No applications yet')).toBeTruthy();
    expect(screen.getByTestId('empty-state').textContent).toMatch(/prod, dev, stable/);
  });

  it('shows the error with a hint and retries', async () => {
    let fail = true;
    const api = fakeApi({
      listApplications: async () => {
        if (fail) throw new Error('connect ECONNREFUSED 127.0.0.1:7007');
        return [];
      },
    });
    render(api);
    expect(await screen.findByText('Could not load promotions data')).toBeTruthy();
    expect(screen.getByText('connect ECONNREFUSED 127.0.0.1:7007')).toBeTruthy();
    expect(screen.getByText(/controller are running/)).toBeTruthy();
    fail = false;
    fireEvent.click(screen.getByRole('button', { name: 'Retry' }));
    expect(await screen.findByText('No applications yet')).toBeTruthy();
  });
});
