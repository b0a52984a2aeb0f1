// @vitest-environment jsdom
import type { PromotionPlan } from '@kpromo/plugin-promotions-react';
import { act, cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { useState } from 'react';
import { Route, Routes } from 'react-router-dom';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { planTimeline } from '../src/components/PlanTimeline';
import { PlanView, planChanges } from '../src/components/PlanView';
import { PromotionsPage } from '../src/components/PromotionsPage';
import { approvedPlan, fakeApi, plan } from './fixtures';
import { renderWith } from './render';

afterEach(() => {
  cleanup();
  vi.useRealTimers();
});

const D = (c: string) => `sha256:${c.repeat(64)}`;

/** shop-prod-1 finished: checkout written (v1.2.0 -> v1.3.0-stamp), cart failed before writing. */
function finished(phase: 'Complete' | 'RolledBack' = 'Complete'): PromotionPlan {
  return approvedPlan({
    phase,
    startedAt: '2026-12-02T10:02:00Z',
    completedAt: '2026-12-02T10:03:05Z',
    succeeded: 1,
    failed: 1,
    apps: [
      {
        application: 'checkout',
        phase: phase === 'RolledBack' ? 'RolledBack' : 'Succeeded',
        targetTag: 'v1.3.0-stamp',
        digest: D('b'),
        previous: { tag: 'v1.2.0', digest: D('a') },
        written: true,
        startedAt: '2026-12-02T10:02:00Z',
        finishedAt: '2026-12-02T10:02:40Z',
      },
      {
        application: 'cart',
        phase: 'Failed',
        reason: 'CopyFailed',
        message: `blob ${D('c')} unknown`,
        startedAt: '2026-12-02T10:02:00Z',
        finishedAt: '2026-12-02T10:03:05Z',
        attempts: 3,
      },
    ],
  });
}

/** Its rollback: restores v1.2.0 in prod; `previous` is what ran before the rollback. */
function rollback(phase?: 'Promoting' | 'RolledBack'): PromotionPlan {
  const p = plan(
    { action: 'rollback', rollbackOf: 'shop-prod-1', candidates: [], requestedBy: 'user:default/alice' },
    phase
      ? {
          phase,
          gate: { approved: true, required: 1 },
          apps: [
            {
              application: 'checkout',
              phase: phase === 'RolledBack' ? 'Succeeded' : 'RollingOut',
              targetTag: 'v1.2.0',
              digest: D('a'),
              previous: { tag: 'v1.3.0-stamp', digest: D('b') },
              written: true,
            },
          ],
        }
      : undefined,
  );
  return { ...p, metadata: { ...p.metadata, name: 'shop-prod-1-rollback', creationTimestamp: '2026-12-02T10:10:00Z' } };
}

describe('rollback plans', () => {
  it('lists before and after the right way round, also before the rollback has started', () => {
    expect(planChanges(rollback('Promoting'))).toEqual([
      { application: 'checkout', from: 'v1.3.0-stamp', to: 'v1.2.0' },
    ]);
    // not started: what the original plan replaced, restored
    expect(planChanges(rollback(), finished())).toEqual([
      { application: 'checkout', from: 'v1.3.0-stamp', to: 'v1.2.0' },
    ]);
  });

  it('shows what the target ran before and what it restores, only the target stage, and its own colour when done', async () => {
    const api = fakeApi({
      getPlan: async (_ns, name) => (name === 'shop-prod-1' ? finished('RolledBack') : rollback('RolledBack')),
      listPlans: async () => [finished('RolledBack'), rollback('RolledBack')],
    });
    renderWith(<PlanView namespace="shop" name="shop-prod-1-rollback" pollMs={10_000} />, { api });
    const subtitle = await screen.findByTestId('plan-subtitle');
    expect(subtitle.textContent).toBe('Rollback of shop-prod-1 in prod · flow shop · approved');
    const row = await screen.findByRole('row', { name: /checkout/ });
    const headers = screen.getAllByRole('columnheader').map((h) => h.textContent);
    expect(headers).toEqual(['Application', 'prod before', 'Restores', 'Progress', 'Details']);
    const cells = within(row)
      .getAllByRole('gridcell')
      .map((c) => c.textContent);
    expect(cells[0]).toMatch(/^v1\.3\.0-stamp/);
    expect(cells[1]).toMatch(/^v1\.2\.0/);
    // a finished rollback is "restored" (its own tone), not the warning of the plan it undid
    expect(screen.getByTestId('plan-phase').querySelector('[data-tone]')?.getAttribute('data-tone')).toBe('restored');
    cleanup();
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, { api });
    await screen.findByTestId('existing-rollback');
    expect(screen.getByTestId('plan-phase').querySelector('[data-tone]')?.getAttribute('data-tone')).toBe('warning');
  });

  it('links to the existing rollback instead of offering another', async () => {
    const api = fakeApi({
      getPlan: async () => finished(),
      listPlans: async () => [finished(), rollback('Promoting')],
    });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, { api });
    const existing = await screen.findByTestId('existing-rollback');
    expect(within(existing).getByRole('link').getAttribute('href')).toBe('/promotions/plans/shop/shop-prod-1-rollback');
    expect(existing.textContent).toContain('Promoting');
    expect(screen.queryByRole('button', { name: 'Roll back' })).toBeNull();
  });

  it('shows the refusal (409) when the plan shown was deleted and created again before the rollback', async () => {
    const sent: unknown[] = [];
    const api = fakeApi({
      getPlan: async () => finished(),
      listPlans: async () => [finished()],
      rollbackPlan: async (_ns, _name, opts) => {
        sent.push(opts);
        throw Object.assign(
          new Error(
            'PromotionPlan shop/shop-prod-1 changed since you opened it: you reviewed uid 6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11, it is now uid 0000 (deleted and created again, perhaps with other candidates); review it again before rolling back (HTTP 409)',
          ),
          { response: { status: 409 } },
        );
      },
    });
    renderWith(
      <Routes>
        <Route path="/promotions/*" element={<PromotionsPage />} />
      </Routes>,
      { api, initialRouteEntries: ['/promotions/plans/shop/shop-prod-1'] },
    );
    fireEvent.click(await screen.findByRole('button', { name: 'Roll back' }));
    fireEvent.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Roll back' }));
    // The dialog stays open with the refusal: nothing was created, nowhere to go.
    await waitFor(() =>
      expect(within(screen.getByRole('dialog')).getByText(/changed since you opened it/)).toBeTruthy(),
    );
    expect(sent).toEqual([{ approve: true, uid: '6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11' }]);
  });

  it('tells the plan history from creation to the rollback, with durations', () => {
    const events = planTimeline(finished('RolledBack'), rollback('RolledBack'));
    expect(events.map((e) => e.kind)).toEqual([
      'created',
      'approved',
      'started',
      'app-started',
      'app-started',
      'app-finished',
      'app-finished',
      'finished',
      'rollback',
    ]);
    const text = events.map((e) => e.text);
    expect(text[1]).toBe('Approved by user:default/alice');
    expect(text).toContain('checkout: RolledBack after 40s');
    expect(text).toContain('cart: Failed after 1m 5s (3 attempts) – CopyFailed: blob sha256:cccccccccccc… unknown');
    expect(text).toContain('Finished RolledBack: 1 succeeded, 1 failed, took 1m 5s');
    expect(text.at(-1)).toBe('Rolled back by shop-prod-1-rollback (user:default/alice)');
  });
});

const realSetTimeout = globalThis.setTimeout;
/**
 * Retries `check` until it passes, on real timers and without moving a fake clock: RTL's findBy and
 * waitFor wait on a setTimeout of their own (which a fake clock never fires), and vi.waitFor moves
 * the fake clock between its attempts.
 */
async function onRealTimers<T>(check: () => T, timeoutMs = 5000): Promise<T> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    try {
      return check();
    } catch (e) {
      if (performance.now() > end) throw e;
      await new Promise((r) => realSetTimeout(r, 20));
    }
  }
}

/** A page that switches from one plan to another without remounting the plan view. */
function Switcher() {
  const [name, setName] = useState('plan-a');
  return (
    <>
      <button type="button" onClick={() => setName('plan-b')}>
        next
      </button>
      <PlanView namespace="shop" name={name} pollMs={10_000} />
    </>
  );
}

describe('plan pages stay live and never stale', () => {
  it('keeps polling slowly after the plan is final, and loads again when the window gets focus', async () => {
    // The polls run on a fake clock moved by hand: a busy machine cannot stretch a short real wait
    // over two slow polls.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const api = fakeApi({ getPlan: async () => finished() });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={20} slowPollMs={150} />, { api });
    await onRealTimers(() => screen.getByTestId('plan-phase'));
    const count = () => api.calls.filter((c) => c.startsWith('getPlan')).length;
    const n = count();
    await act(() => vi.advanceTimersByTimeAsync(149));
    expect(count()).toBe(n); // not every 20 ms any more
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(count()).toBe(n + 1); // but still every slowPollMs
    const m = count();
    window.dispatchEvent(new Event('focus'));
    await onRealTimers(() => expect(count()).toBeGreaterThan(m));
  });

  it('never shows the previous plan while the next one loads', async () => {
    let releaseB: () => void = () => undefined;
    const b = new Promise<void>((r) => {
      releaseB = r;
    });
    const named = (name: string) => ({ ...plan(), metadata: { ...plan().metadata, name } });
    const api = fakeApi({
      getPlan: async (_ns, name) => {
        if (name === 'plan-b') await b;
        return named(name);
      },
    });
    renderWith(<Switcher />, { api });
    expect(await screen.findByRole('heading', { level: 2, name: 'plan-a' })).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'next' }));
    await waitFor(() => expect(screen.queryByRole('heading', { level: 2, name: 'plan-a' })).toBeNull());
    expect(screen.getByLabelText('Loading plan')).toBeTruthy();
    releaseB();
    expect(await screen.findByRole('heading', { level: 2, name: 'plan-b' })).toBeTruthy();
  });

  it('says a plan that does not exist was not found, with the way back', async () => {
    const api = fakeApi({
      getPlan: async () => {
        throw Object.assign(new Error('PromotionPlan shop/nope not found (HTTP 404)'), {
          response: { status: 404 },
          body: { error: { name: 'NotFoundError', message: 'PromotionPlan shop/nope not found' } },
        });
      },
    });
    renderWith(<PlanView namespace="shop" name="nope" pollMs={10_000} />, { api });
    expect(await screen.findByText('Plan nope not found')).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Back to all plans' }).getAttribute('href')).toBe('/promotions/plans');
    expect(screen.queryByText(/backend is not installed/)).toBeNull();
  });

  it('announces progress to screen readers and names the tab after the plan', async () => {
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({
        getPlan: async () =>
          approvedPlan({
            phase: 'Promoting',
            succeeded: 1,
            apps: [
              { application: 'checkout', phase: 'Succeeded' },
              { application: 'cart', phase: 'RollingOut' },
            ],
          }),
      }),
    });
    const live = await screen.findByTestId('plan-announcer');
    expect(live.getAttribute('aria-live')).toBe('polite');
    expect(live.textContent).toBe(
      'Plan shop-prod-1: Promoting. 1 of 2 applications done (1 succeeded, 0 failed). cart is RollingOut.',
    );
    expect(document.title).toBe('shop-prod-1 · Plans | Backstage');
  });
});
