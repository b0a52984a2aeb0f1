// @vitest-environment jsdom
import type { DiffResult, FlowView, PromotionPlan } from '@kpromo/plugin-promotions-react';
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { PipelinePage } from '../src/components/PipelinePage';
import { PlansPage } from '../src/components/PlansPage';
import { approvedPlan, fakeApi, plan, shopFlow } from './fixtures';
import { renderWith } from './render';

afterEach(cleanup);

const upToDate = (from: string, to: string): DiffResult => ({
  flow: 'shop',
  from,
  to,
  candidates: [],
  skipped: [
    { application: 'checkout', reason: 'UpToDate', message: `prod already runs sha256:${'a'.repeat(64)}` },
    { application: 'cart', reason: 'UpToDate', message: '' },
  ],
});

describe('new plan form', () => {
  it('starts on a stage that has candidates', async () => {
    const api = fakeApi({
      getDiff: async (q) =>
        q.from === 'stable' && q.to === 'prod'
          ? { flow: 'shop', from: q.from, to: q.to, candidates: plan().spec.candidates, skipped: [] }
          : upToDate(q.from, q.to),
    });
    renderWith(<PlansPage />, { api, permission: 'allow' });
    await screen.findByTestId('diff-preview');
    // the preview is checked again once the form moves to the stage with candidates
    await waitFor(() =>
      expect(screen.getByTestId('diff-preview').textContent).toContain('2 candidates stable → prod (flow shop)'),
    );
    expect((screen.getByRole('button', { name: 'Create plan' }) as HTMLButtonElement).disabled).toBe(false);
  });

  it('disables Create plan with a one-line reason when nothing can be promoted, without digests', async () => {
    renderWith(<PlansPage />, { api: fakeApi({ getDiff: async (q) => upToDate(q.from, q.to) }), permission: 'allow' });
    await waitFor(() =>
      expect(screen.getByTestId('create-blocker').textContent).toBe(
        'Nothing to promote dev → stable: already up to date ×2.',
      ),
    );
    expect((screen.getByRole('button', { name: 'Create plan' }) as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('diff-preview').textContent).not.toMatch(/[a-f0-9]{64}/);
  });
});

describe('plans list', () => {
  const many = (): PromotionPlan[] =>
    Array.from({ length: 25 }, (_, i) => {
      const p =
        i % 5 === 0
          ? plan({ action: 'rollback', rollbackOf: 'x', candidates: [] })
          : approvedPlan({ phase: 'Complete' });
      return {
        ...p,
        metadata: {
          ...p.metadata,
          name: `p-${String(i).padStart(2, '0')}`,
          creationTimestamp: new Date(Date.now() - i * 60_000).toISOString(),
        },
      };
    });

  it('pages by 20 on the server, newest first, with relative times that show the absolute time on focus', async () => {
    const api = fakeApi({ listPlans: async () => many() });
    renderWith(<PlansPage />, { api, permission: 'deny' });
    const table = await screen.findByRole('grid', { name: 'Promotion plans' });
    await waitFor(() => expect(within(table).getAllByRole('row')).toHaveLength(21));
    expect(api.calls).toContain('listPlansPage({"limit":20})');
    expect(within(table).getAllByRole('row')[1].textContent).toContain('p-00');
    expect(within(table).getAllByRole('row')[1].textContent).toContain('just now');
    expect(within(table).getAllByRole('row')[3].textContent).toContain('2 min ago');
    const time = within(within(table).getAllByRole('row')[3]).getByTestId('relative-time');
    expect(time.getAttribute('title')).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
    expect(within(time).queryByTestId('absolute-time')).toBeNull();
    fireEvent.focus(time);
    expect(within(time).getByTestId('absolute-time').textContent).toContain(time.getAttribute('title'));
    expect(screen.getByTestId('plans-paging').textContent).toContain('1–20 of 25 plans');
    fireEvent.click(screen.getByRole('button', { name: 'Next' }));
    await waitFor(() => expect(within(table).getAllByRole('row')).toHaveLength(6));
    expect(api.calls).toContain('listPlansPage({"limit":20,"continue":"20"})');
    expect(screen.getByTestId('plans-paging').textContent).toContain('21–25 of 25 plans');
    fireEvent.click(screen.getByRole('button', { name: 'Previous' }));
    await waitFor(() => expect(within(table).getAllByRole('row')).toHaveLength(21));
  });

  it('asks the server for the filtered plans and offers to clear filters that match nothing', async () => {
    const api = fakeApi({ listPlans: async () => many() });
    renderWith(<PlansPage />, { api, permission: 'deny', initialRouteEntries: ['/?action=rollback'] });
    const table = await screen.findByRole('grid', { name: 'Promotion plans' });
    await waitFor(() => expect(within(table).getAllByRole('row')).toHaveLength(6));
    expect(api.calls).toContain('listPlansPage({"action":"rollback","limit":20})');
    fireEvent.change(screen.getByRole('searchbox', { name: 'Application' }), { target: { value: 'nothing' } });
    expect((await screen.findByTestId('no-plan-matches')).textContent).toContain('Clear the filters');
    expect(api.calls).toContain('listPlansPage({"action":"rollback","application":"nothing","limit":20})');
  });
});

describe('pipeline', () => {
  it('shows each stage, what may move next, and promotes with one click through the confirmation', async () => {
    const api = fakeApi({
      getDiff: async (q) =>
        q.from === 'dev' && q.to === 'stable'
          ? {
              flow: 'shop',
              from: q.from,
              to: q.to,
              candidates: [plan().spec.candidates[0]],
              skipped: [{ application: 'cart', reason: 'UpToDate', message: '' }],
            }
          : q.from === 'stable' && q.to === 'prod'
            ? upToDate(q.from, q.to)
            : Promise.reject(
                Object.assign(new Error('no PromotionFlow in namespace shop has the stage transition'), {
                  response: { status: 404 },
                }),
              ),
      createPlan: async () => ({ plan: approvedPlan(), skipped: [] }),
    });
    renderWith(<PipelinePage />, { api, permission: 'allow' });
    const toStable = await screen.findByTestId('transition-dev-stable');
    expect(within(toStable).getByTestId('eligible-count').textContent).toBe('1 of 2 ready to promote');
    expect(within(screen.getByTestId('transition-stable-prod')).getByTestId('eligible-count').textContent).toBe(
      'Nothing to promote: already up to date ×2',
    );
    expect(screen.getByTestId('stage-dev-checkout').textContent).toContain('ready for stable');
    expect(screen.getByTestId('stage-prod-checkout').textContent).toContain('Degraded');
    expect(screen.getByTestId('stage-prod-cart').textContent).toContain('not deployed');
    fireEvent.click(within(toStable).getByRole('button', { name: 'Promote 1 to stable' }));
    const dialog = await screen.findByRole('dialog');
    expect(within(dialog).getByTestId('candidate-checkout').textContent).toContain('checkout: v1.2.0 → v1.3.0');
    expect(api.calls.some((c) => c.startsWith('createPlan'))).toBe(false);
    fireEvent.click(within(dialog).getByRole('button', { name: 'Promote to stable' }));
    // It approves exactly the digest the column showed (expect), never what runs in dev by the time it arrives.
    const shown = plan().spec.candidates[0].from.digest;
    await waitFor(() =>
      expect(api.calls).toContain(
        `createPlan({"namespace":"shop","flow":"shop","from":"dev","to":"stable","applications":["checkout"],"expect":{"checkout":"${shown}"},"approve":true})`,
      ),
    );
  });

  it('shows what the open plan of a transition waits for', async () => {
    const waiting = plan(
      { from: 'dev', to: 'stable' },
      { phase: 'Pending', gate: { approved: false, required: 2, waitingFor: '1 more approval from team-shop' } },
    );
    renderWith(<PipelinePage />, {
      api: fakeApi({
        listPlans: async () => [waiting],
        getDiff: async (q) => ({ ...upToDate(q.from, q.to), candidates: plan().spec.candidates }),
      }),
      permission: 'allow',
    });
    const t = await screen.findByTestId('transition-dev-stable');
    expect(within(t).getByTestId('plan-hold').textContent).toBe('waiting for 1 more approval from team-shop');
    expect(within(t).queryByRole('button', { name: /Promote/ })).toBeNull();
  });

  it("shows the cooldown of an automatic stage, and the wait it holds the stage's next plan in", async () => {
    const message = 'cooldown: waiting until 14:32:05 UTC for dev to be quiet for 10m; will take checkout v1.3.0';
    const flow: FlowView = {
      ...shopFlow,
      stages: [
        { environment: 'dev', approval: 'manual' },
        {
          environment: 'stable',
          approval: 'auto',
          cooldown: '10m',
          cooldownWait: { environment: 'stable', until: '2026-12-03T14:32:05Z', candidates: 1, takes: [], message },
        },
        shopFlow.stages[2],
      ],
    };
    renderWith(<PipelinePage />, {
      api: fakeApi({ listFlows: async () => [flow], getDiff: async (q) => upToDate(q.from, q.to) }),
      permission: 'allow',
    });
    const t = await screen.findByTestId('transition-dev-stable');
    expect(within(t).getByTestId('cooldown-wait').textContent).toBe(message);
    expect(screen.getByTestId('stage-rules-stable').textContent).toBe('auto · cooldown 10m');
    expect(within(screen.getByTestId('transition-stable-prod')).queryByTestId('cooldown-wait')).toBeNull();
  });

  it("shows the org rules that decide a stage next to the flow's own, weaker gate", async () => {
    const rule = (field: string, requires: string, unmet = false) => ({
      orgPolicy: 'kpromo-system/platform',
      rule: 'prod-gates',
      field: `spec.rules[0].${field}`,
      requires,
      flowHas: '',
      stricter: true,
      ...(unmet ? { unmet: true } : {}),
    });
    const flow: FlowView = {
      ...shopFlow,
      stages: [
        shopFlow.stages[0],
        shopFlow.stages[1],
        {
          environment: 'prod',
          approval: 'manual',
          approvers: { count: 1 },
          orgRules: [
            rule('approvals.minCount', '2 approvals at least'),
            rule('requireVerification', 'at least one verification check', true),
          ],
        },
      ],
    };
    renderWith(<PipelinePage />, {
      api: fakeApi({ listFlows: async () => [flow], getDiff: async (q) => upToDate(q.from, q.to) }),
      permission: 'allow',
    });
    await screen.findByTestId('transition-stable-prod');
    expect(screen.getByTestId('stage-rules-prod').textContent).toBe(
      'manual · 1 approval · org rule prod-gates: 2 approvals at least · org rule prod-gates: at least one verification check (unmet: plans wait)',
    );
  });
});
