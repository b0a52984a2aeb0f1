// @vitest-environment jsdom
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { ReleasesPage } from '../src/components/ReleasesPage';
import { fakeApi } from './fixtures';
import { renderWith } from './render';

const render = (api = fakeApi()) => renderWith(<ReleasesPage />, { api });

afterEach(cleanup);

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

  it('filters rows by application name', async () => {
    render();
    await screen.findByTestId('cell-cart-dev');
    fireEvent.change(screen.getByRole('searchbox'), { target: { value: 'check' } });
    await waitFor(() => expect(screen.queryByTestId('cell-cart-dev')).toBeNull());
    expect(screen.getByTestId('cell-checkout-dev')).toBeTruthy();
    fireEvent.change(screen.getByRole('searchbox'), { target: { value: 'nothing-like-this' } });
    expect((await screen.findByTestId('no-matches')).textContent).toMatch(/No application matches/);
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
