// @vitest-environment jsdom
import type { PromotionPlan } from '@kpromo/plugin-promotions-react';
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { PlansPage } from '../src/components/PlansPage';
import { PlanView, planChanges } from '../src/components/PlanView';
import { fakeApi, plan } from './fixtures';
import { renderWith } from './render';

afterEach(cleanup);

describe('planChanges', () => {
  it('lists the target version before and after per application', () => {
    expect(planChanges(plan())).toEqual([
      { application: 'checkout', from: 'v1.2.0', to: 'v1.3.0' },
      { application: 'cart', from: undefined, to: 'v2.0.0' },
    ]);
  });
});

describe('PlanView', () => {
  it('approve dialog lists what will change, and confirming calls the API', async () => {
    let current = plan();
    const api = fakeApi({
      getPlan: async () => current,
      approvePlan: async () => {
        current = plan({ approved: true, approvedBy: 'user:default/alice' }, { phase: 'Promoting' });
        return current;
      },
    });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={50} />, { api: api, permission: 'allow' });
    fireEvent.click(await screen.findByRole('button', { name: 'Approve & promote' }));
    const dialog = await screen.findByRole('dialog');
    const items = within(dialog)
      .getAllByRole('listitem')
      .map((li) => li.textContent);
    expect(items).toEqual(['checkout: v1.2.0 → v1.3.0 in prod', 'cart: not deployed → v2.0.0 in prod']);
    expect(api.calls.some((c) => c.startsWith('approvePlan'))).toBe(false);
    fireEvent.click(within(dialog).getByRole('button', { name: 'Promote to prod' }));
    await waitFor(() => expect(api.calls).toContain('approvePlan("shop","shop-prod-1")'));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(await screen.findByText(/approved by user:default\/alice/)).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Approve & promote' })).toBeNull();
  });

  it('shows per-app progress live by polling, and failures with their reasons', async () => {
    const states: PromotionPlan[] = [
      plan(
        { approved: true },
        {
          phase: 'Promoting',
          apps: [
            { application: 'checkout', phase: 'Copying' },
            { application: 'cart', phase: 'Pending' },
          ],
        },
      ),
      plan(
        { approved: true },
        {
          phase: 'Incomplete',
          succeeded: 1,
          failed: 1,
          apps: [
            { application: 'checkout', phase: 'Succeeded', targetTag: 'v1.3.0-20261202T100000Z', written: true },
            {
              application: 'cart',
              phase: 'Failed',
              reason: 'RolloutTimeout',
              message: 'deployment cart not ready after 300s',
            },
          ],
        },
      ),
    ];
    let i = 0; // the test moves the controller on; the view must pick it up by polling
    const api = fakeApi({ getPlan: async () => states[i] });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={30} />, { api: api, permission: 'allow' });
    expect((await screen.findByTestId('phase-checkout')).textContent).toBe('Copying');
    const before = api.calls.length;
    i = 1;
    await waitFor(() => expect(screen.getByTestId('phase-checkout').textContent).toBe('Succeeded'));
    expect(api.calls.length).toBeGreaterThan(before);
    expect(screen.getByTestId('phase-cart').textContent).toBe('Failed');
    expect(screen.getByTestId('failures').textContent).toContain(
      'cart: RolloutTimeout – deployment cart not ready after 300s',
    );
    expect(screen.getByTestId('plan-counts').textContent).toContain('1 succeeded · 1 failed');
    // final: polling stopped
    const n = api.calls.filter((c) => c.startsWith('getPlan')).length;
    await new Promise((r) => setTimeout(r, 150));
    expect(api.calls.filter((c) => c.startsWith('getPlan')).length).toBe(n);
    // a finished plan that wrote something can be rolled back
    fireEvent.click(screen.getByRole('button', { name: 'Roll back' }));
    const dialog = await screen.findByRole('dialog');
    expect(within(dialog).getByTestId('rollback-list').textContent).toContain('checkout: v1.3.0-20261202T100000Z → ?');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Roll back' }));
    await waitFor(() => expect(api.calls).toContain('rollbackPlan("shop","shop-prod-1",{"approve":true})'));
  });

  it('hides approve and rollback without permission and says whom to ask', async () => {
    const api = fakeApi({
      getPlan: async () => plan({}, { phase: 'Pending' }),
    });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={1000} />, { api: api, permission: 'deny' });
    expect(await screen.findByText('Waiting for approval')).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Approve & promote' })).toBeNull();
    expect(screen.queryByRole('button', { name: 'Roll back' })).toBeNull();
  });

  it('checks approve per application against its catalog entity: one denied app hides the button', async () => {
    const asked: string[] = [];
    const policy = (name: string, ref?: string) => {
      if (ref) asked.push(`${name} ${ref}`);
      return name !== 'promotion.plan.approve' || ref !== 'component:default/shop-cart';
    };
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => plan({}, { phase: 'Pending' }) }),
      permission: policy,
    });
    expect(await screen.findByText('Waiting for approval')).toBeTruthy();
    expect(asked).toContain('promotion.plan.approve component:default/checkout');
    expect(asked).toContain('promotion.plan.approve component:default/shop-cart');
    expect(screen.queryByRole('button', { name: 'Approve & promote' })).toBeNull();
  });

  it('shows an error when the plan cannot be loaded', async () => {
    const api = fakeApi({
      getPlan: async () => {
        throw new Error('PromotionPlan shop/nope not found');
      },
    });
    renderWith(<PlanView namespace="shop" name="nope" pollMs={10_000} />, { api: api, permission: 'allow' });
    expect(await screen.findByText('Could not load the plan')).toBeTruthy();
    expect(screen.getByText('PromotionPlan shop/nope not found')).toBeTruthy();
  });
});

describe('PlansPage', () => {
  it('offers the new-plan form only with promotion.plan.create, and explains the empty list', async () => {
    renderWith(<PlansPage />, { api: fakeApi(), permission: 'deny' });
    expect(await screen.findByText('No promotion plans yet')).toBeTruthy();
    expect(screen.getByTestId('empty-state').textContent).toMatch(/lack promotion.plan.create/);
    expect(screen.queryByRole('button', { name: 'Create plan' })).toBeNull();
  });

  it('previews candidates and creates a plan', async () => {
    const api = fakeApi({
      getDiff: async (q) => ({
        from: q.from,
        to: q.to,
        flow: 'shop',
        candidates: plan().spec.candidates,
        skipped: [{ application: 'search', reason: 'UpToDate', message: 'already runs sha256:…' }],
      }),
    });
    renderWith(<PlansPage />, { api: api, permission: 'allow' });
    fireEvent.click(await screen.findByRole('button', { name: 'Preview candidates' }));
    const preview = await screen.findByTestId('diff-preview');
    expect(preview.textContent).toContain('2 candidates dev → stable (flow shop)');
    expect(preview.textContent).toContain('checkout: v1.2.0 → v1.3.0');
    expect(preview.textContent).toContain('search: skipped (UpToDate)');
    fireEvent.click(screen.getByRole('button', { name: 'Create plan' }));
    await waitFor(() =>
      expect(api.calls.some((c) => c.startsWith('createPlan({"from":"dev","to":"stable"'))).toBe(true),
    );
  });
});
