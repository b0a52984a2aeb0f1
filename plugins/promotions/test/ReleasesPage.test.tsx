// @vitest-environment jsdom
import type { ApplicationSummary, ApplicationsFilter, PromotionsApi } from '@kpromo/plugin-promotions-react';
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { filterGlobs, ReleasesPage } from '../src/components/ReleasesPage';
import { fakeApi, pageApplicationsInMemory } from './fixtures';
import { renderWith } from './render';

/**
 * No poll during a test (an hour): the requests counted are exactly those the page and the clicks
 * made, however slow the machine (a cold run took 16 s over a page of 100 rows, past the 10 s poll).
 */
const NO_POLL = 3_600_000;
const render = (api = fakeApi()) => renderWith(<ReleasesPage pollMs={NO_POLL} />, { api });
/**
 * Paging behaviour on pages of 10 (25 applications, 3 pages): the same logic as pages of 100 for a
 * tenth of jsdom's rendering work.
 */
const renderPaged = (api: ReturnType<typeof fakeApi>) =>
  renderWith(<ReleasesPage pageSize={10} pollMs={NO_POLL} />, { api });

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
    renderPaged(
      fakeApi({ listApplicationsPage: async (f) => ({ items: manyApps(25).slice(0, f.limit), continue: 'x' }) }),
    );
    await screen.findByRole('grid', { name: 'Releases per environment' });
    expect(range()).toBe('Showing 1–10 applications');
  });

  it('pages forward with the continue token of the previous answer and back with the one before', async () => {
    const api = fakeApi({ listApplicationsPage: opaquePages(manyApps(25)) });
    renderPaged(api);
    await screen.findByRole('grid', { name: 'Releases per environment' });
    expect(pageRequests(api)).toEqual([{ limit: 10 }]);

    fireEvent.click(button('Next'));
    await waitFor(() => expect(range()).toBe('Showing 11–20 of 25 applications'));
    expect(pageRequests(api).at(-1)).toEqual({ limit: 10, continue: 'opaque-10' });
    expect(rowNames()[0]).toBe('app-010');

    fireEvent.click(button('Next'));
    await waitFor(() => expect(range()).toBe('Showing 21–25 of 25 applications'));
    expect(pageRequests(api).at(-1)).toEqual({ limit: 10, continue: 'opaque-20' });
    expect(rowNames()).toHaveLength(5);
    expect(button('Next').disabled).toBe(true);

    fireEvent.click(button('Previous'));
    await waitFor(() => expect(range()).toBe('Showing 11–20 of 25 applications'));
    expect(pageRequests(api).at(-1)).toEqual({ limit: 10, continue: 'opaque-10' });
    expect(rowNames()[0]).toBe('app-010');

    fireEvent.click(button('Previous'));
    await waitFor(() => expect(range()).toBe('Showing 1–10 of 25 applications'));
    expect(pageRequests(api).at(-1)).toEqual({ limit: 10 });
    expect(button('Previous').disabled).toBe(true);
    // one request per page shown, nothing else
    expect(pageRequests(api)).toHaveLength(5);
  });

  it('reloads only the page shown (as the poll does)', async () => {
    const api = fakeApi({ listApplicationsPage: opaquePages(manyApps(25)) });
    renderPaged(api);
    await screen.findByRole('grid', { name: 'Releases per environment' });
    fireEvent.click(button('Next'));
    await waitFor(() => expect(range()).toBe('Showing 11–20 of 25 applications'));
    expect(pageRequests(api)).toHaveLength(2);
    fireEvent.click(button('Refresh'));
    await waitFor(() => expect(pageRequests(api)).toHaveLength(3));
    expect(pageRequests(api).at(-1)).toEqual({ limit: 10, continue: 'opaque-10' });
  });

  it('polls the page shown at the interval it was given, and says so', async () => {
    const api = fakeApi({ listApplicationsPage: opaquePages(manyApps(25)) });
    renderWith(<ReleasesPage pageSize={10} pollMs={2000} />, { api });
    await screen.findByRole('grid', { name: 'Releases per environment' });
    expect(screen.getByText(/Updates every 2 seconds/)).toBeTruthy();
    await waitFor(() => expect(pageRequests(api).length).toBeGreaterThanOrEqual(2));
    expect(pageRequests(api).every((r) => JSON.stringify(r) === '{"limit":10}')).toBe(true);
  });

  it('filters by name on the server with a *text* glob once typing pauses, from the first page', async () => {
    const api = fakeApi({ listApplicationsPage: opaquePages(manyApps(25)) });
    renderPaged(api);
    await screen.findByRole('grid', { name: 'Releases per environment' });
    fireEvent.click(button('Next'));
    await waitFor(() => expect(range()).toBe('Showing 11–20 of 25 applications'));

    fireEvent.change(nameField(), { target: { value: 'APP-02' } });
    // debounced: nothing asked for while the user may still be typing
    expect(pageRequests(api).some((r) => r.applications)).toBe(false);
    await waitFor(() => expect(range()).toBe('Showing 1–5 of 5 applications'));
    const filtered = pageRequests(api).filter((r) => r.applications);
    // lowercased (Kubernetes names are), first page, and never the old position under the new filter
    expect(filtered).toEqual([{ limit: 10, applications: ['*app-02*'] }]);
    expect(rowNames()[0]).toBe('app-020');
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
    const api = fakeApi({ listApplicationsPage: undefined, listApplications: async () => manyApps(15) });
    renderPaged(api);
    await screen.findByRole('grid', { name: 'Releases per environment' });
    expect(rowNames()).toHaveLength(10);
    expect(range()).toBe('Showing 1–10 of 15 applications');
    fireEvent.click(button('Next'));
    await waitFor(() => expect(range()).toBe('Showing 11–15 of 15 applications'));
    expect(rowNames()[0]).toBe('app-010');
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
