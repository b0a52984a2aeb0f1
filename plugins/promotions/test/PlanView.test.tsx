// @vitest-environment jsdom
import { type PromotionPlan, planProgress } from '@kpromo/plugin-promotions-react';
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { PlansPage } from '../src/components/PlansPage';
import { formatCountdown, PlanDetails, PlanView, planChanges } from '../src/components/PlanView';
import { ALICE, approvedPlan, fakeApi, plan } from './fixtures';
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

describe('formatCountdown', () => {
  it('counts down in days, hours, minutes or seconds, and says now once passed', () => {
    const now = Date.parse('2026-12-02T10:00:00Z');
    expect(formatCountdown('2026-12-04T13:30:00Z', now)).toBe('in 2d 3h');
    expect(formatCountdown('2026-12-02T12:05:59Z', now)).toBe('in 2h 5m');
    expect(formatCountdown('2026-12-02T10:07:00Z', now)).toBe('in 7m');
    expect(formatCountdown('2026-12-02T10:00:40Z', now)).toBe('in 40s');
    expect(formatCountdown('2026-12-02T09:00:00Z', now)).toBe('now');
  });
});

describe('PlanView', () => {
  it('approve dialog lists what will change, and confirming calls the API', async () => {
    let current = plan();
    const api = fakeApi({
      getPlan: async () => current,
      approvePlan: async () => {
        current = approvedPlan({ phase: 'Promoting' });
        return current;
      },
    });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={50} />, { api: api, permission: 'allow' });
    fireEvent.click(await screen.findByRole('button', { name: 'Approve & promote' }));
    expect(screen.getByTestId('approvers').textContent).toBe('No approvals yet');
    const dialog = await screen.findByRole('dialog');
    const items = within(dialog)
      .getAllByRole('listitem')
      .map((li) => li.textContent);
    expect(items).toEqual(['checkout: v1.2.0 → v1.3.0 in prod', 'cart: not deployed → v2.0.0 in prod']);
    expect(api.calls.some((c) => c.startsWith('approvePlan'))).toBe(false);
    fireEvent.click(within(dialog).getByRole('button', { name: 'Promote to prod' }));
    await waitFor(() =>
      expect(api.calls).toContain('approvePlan("shop","shop-prod-1",{"uid":"6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11"})'),
    );
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    // Who approved and when the controller saw it, from spec.approvals + status.gate.
    await waitFor(() =>
      expect(screen.getByTestId('approvers').textContent).toBe('Approved by alice at 2026-12-02 10:01:00 UTC'),
    );
    expect(screen.getByText(/flow shop · approved$/)).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Approve & promote' })).toBeNull();
  });

  it('shows who requested and approved, who still must approve, and hides Approve once the user approved', async () => {
    const twoNeeded = plan(
      { requestedBy: 'user:default/bob', approvals: [{ user: ALICE, comment: 'LGTM' }] },
      {
        phase: 'Pending',
        gate: {
          approved: false,
          required: 2,
          approvers: [{ user: ALICE, counted: true, observedAt: '2026-12-02T10:05:00Z' }],
          waitingFor: '1 more approval from groups group:default/release-managers',
        },
      },
    );
    const api = fakeApi({ getPlan: async () => twoNeeded });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, { api, permission: 'allow' });
    expect((await screen.findByTestId('requested-by')).textContent).toBe('Requested by bob');
    // People link to their catalog pages (the full ref on hover).
    expect(within(screen.getByTestId('requested-by')).getByRole('link').getAttribute('href')).toBe(
      '/catalog/default/user/bob',
    );
    expect(screen.getByTestId('approvers').textContent).toBe('Approved by alice at 2026-12-02 10:05:00 UTC – “LGTM”');
    expect(screen.getByTestId('waiting-for').textContent).toBe(
      'Waiting for 1 more approval from groups group:default/release-managers',
    );
    expect(screen.getByText(/flow shop · waiting for approval$/)).toBeTruthy();
    // alice approved already: no second approval from her, and she is told what the plan waits for.
    expect(await screen.findByText('You approved this plan')).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Approve & promote' })).toBeNull();
    cleanup();

    // Another release manager still may approve.
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api,
      permission: 'allow',
      user: 'user:default/carol',
    });
    fireEvent.click(await screen.findByRole('button', { name: 'Approve & promote' }));
    const dialog = await screen.findByRole('dialog');
    expect(dialog.textContent).toContain(
      'Your approval is recorded as user:default/carol; the plan starts once the policy is met (now waiting for 1 more approval from groups group:default/release-managers).',
    );
    fireEvent.click(within(dialog).getByRole('button', { name: 'Promote to prod' }));
    await waitFor(() =>
      expect(api.calls).toContain('approvePlan("shop","shop-prod-1",{"uid":"6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11"})'),
    );
    expect(screen.queryByText('You approved this plan')).toBeNull();
  });

  it('names the agent and the person it acted for when an agent requested the plan', async () => {
    const byAgent = plan(
      { requestedBy: 'user:default/alice', requestedByAgent: 'release-bot' },
      { phase: 'Pending', gate: { approved: false, required: 1, approvers: [], waitingFor: '1 more approval' } },
    );
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => byAgent }),
      permission: 'allow',
    });
    expect((await screen.findByTestId('requested-by')).textContent).toBe('Requested by agent release-bot for alice');
  });

  it('names the person each approval and the request counted as, and why an approval does not count', async () => {
    const selfApproved = plan(
      { requestedBy: 'user:default/bob', approvals: [{ user: 'port:bob@example.com' }] },
      {
        phase: 'Pending',
        gate: {
          approved: false,
          required: 1,
          requestedByPerson: 'bob@example.com',
          approvers: [
            {
              user: 'port:bob@example.com',
              person: 'bob@example.com',
              counted: false,
              why: 'creator of the plan: bob@example.com requested it as user:default/bob',
              observedAt: '2026-12-02T10:05:00Z',
            },
          ],
          waitingFor: '1 more approval',
        },
      },
    );
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => selfApproved }),
      permission: 'allow',
    });
    expect((await screen.findByTestId('requested-by')).textContent).toBe('Requested by bob as bob@example.com');
    expect(screen.getByTestId('approvers').textContent).toBe(
      // The Port identity shows as its address, which is the person already.
      'Approved by bob@example.com at 2026-12-02 10:05:00 UTC (does not count toward the approval policy: creator of the plan: bob@example.com requested it as user:default/bob)',
    );
  });

  it('does not repeat a stale waitingFor while the controller has not seen the newest approval', async () => {
    // What the approve call answers: the approval is in the spec, status.gate is from before it.
    const justApproved = plan(
      { requestedBy: ALICE, approvals: [{ user: ALICE }] },
      { phase: 'Pending', gate: { approved: false, required: 1, waitingFor: '1 more approval' } },
    );
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => justApproved }),
      permission: 'allow',
    });
    expect((await screen.findByTestId('approvers')).textContent).toBe(
      'Approved by alice (not yet seen by the controller)',
    );
    expect(screen.getByTestId('waiting-for').textContent).toBe(
      'Waiting for the controller to evaluate the latest approval',
    );
    expect((await screen.findByText('You approved this plan')).parentElement?.textContent).toContain(
      'It starts once the approval policy is met.',
    );
  });

  it('shows a freeze with reason and countdown, and lets an approver override it with a reason', async () => {
    const until = new Date(Date.now() + 2 * 3600_000 + 30_000).toISOString();
    const frozen = approvedPlan({ phase: 'Pending' }, [ALICE], {
      frozen: { window: 'friday-freeze', reason: 'weekend', until },
    });
    const api = fakeApi({ getPlan: async () => frozen });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api,
      permission: 'allow',
      user: 'user:default/carol',
    });
    const freeze = await screen.findByTestId('freeze');
    expect(freeze.textContent).toBe(`weekend · until ${until.slice(0, 19).replace('T', ' ')} UTC (in 2h 0m)`);
    expect(screen.getByText('Frozen: friday-freeze')).toBeTruthy();
    // The policy is met already: no plain approval, only the override.
    expect(screen.queryByRole('button', { name: 'Approve & promote' })).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Override freeze' }));
    const dialog = await screen.findByRole('dialog');
    expect(dialog.textContent).toContain('prod is frozen by window friday-freeze (weekend).');
    fireEvent.change(within(dialog).getByRole('textbox', { name: 'Reason' }), {
      target: { value: ' hotfix INC-7: checkout answers 500 ' },
    });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Approve despite the freeze' }));
    await waitFor(() =>
      expect(api.calls).toContain(
        'approvePlan("shop","shop-prod-1",{"uid":"6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11","overrideFreeze":true,"overrideReason":"hotfix INC-7: checkout answers 500"})',
      ),
    );
  });

  it('hides the override for the approver who approved already and for an overridden freeze', async () => {
    const until = new Date(Date.now() + 3600_000).toISOString();
    const frozen = approvedPlan({ phase: 'Pending' }, [ALICE], { frozen: { window: 'friday-freeze', until } });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => frozen }),
      permission: 'allow',
    });
    expect(await screen.findByText('Frozen: friday-freeze')).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Override freeze' })).toBeNull();
    cleanup();
    const overridden = approvedPlan({ phase: 'Pending' }, ['user:default/carol'], {
      frozen: { window: 'friday-freeze', until, overriddenBy: 'user:default/carol' },
    });
    overridden.spec.approvals = [
      { user: 'user:default/carol', overrideFreeze: true, overrideReason: 'hotfix INC-7: checkout answers 500' },
    ];
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => overridden }),
      permission: 'allow',
    });
    expect(await screen.findByText('Freeze overridden: friday-freeze')).toBeTruthy();
    expect(screen.getByTestId('freeze').textContent).toContain('overridden by user:default/carol');
    expect(screen.getByTestId('approvers').textContent).toContain(
      '(overriding the freeze: “hotfix INC-7: checkout answers 500”)',
    );
    expect(screen.queryByRole('button', { name: 'Override freeze' })).toBeNull();
  });

  it('shows when soaking candidates become eligible', async () => {
    const eligibleAt = new Date(Date.now() + 45 * 60_000 + 20_000).toISOString();
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => approvedPlan({ phase: 'Pending' }, [ALICE], { eligibleAt }) }),
      permission: 'allow',
    });
    expect((await screen.findByTestId('soak')).textContent).toBe(
      `Soaking in stable: eligible at ${eligibleAt.slice(0, 19).replace('T', ' ')} UTC (in 45m)`,
    );
    expect(screen.queryByTestId('soak-restart')).toBeNull();
  });

  it('shows which alert restarted the soak, and when', async () => {
    const eligibleAt = new Date(Date.now() + 45 * 60_000).toISOString();
    const reset = (at: string, alert: string) => ({
      at,
      environment: 'stable',
      alert,
      fingerprint: 'f1',
      reason: `alert ${alert}{app="web"}: 5xx above 2%`,
    });
    const soakResets = [reset('2026-12-02T10:05:00Z', 'Older'), reset('2026-12-02T10:15:00Z', 'WebErrors')];
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => approvedPlan({ phase: 'Pending', soakResets }, [ALICE], { eligibleAt }) }),
      permission: 'allow',
    });
    expect((await screen.findByTestId('soak-restart')).textContent).toBe(
      'Soak restarted at 2026-12-02 10:15:00 UTC: alert WebErrors{app="web"}: 5xx above 2% (2 restarts)',
    );
  });

  describe('a plan promoted through a pull request', () => {
    const C = 'c'.repeat(40);
    const throughPr = (url: string) =>
      approvedPlan(
        {
          phase: 'Promoting',
          apps: [{ application: 'checkout', phase: 'RollingOut' }],
          pullRequest: {
            forge: 'gitea',
            repository: 'platform/gitops',
            branch: 'kpromo/shop-prod-1',
            base: 'main',
            commit: C,
            number: 12,
            url,
            state: 'open',
            reviews: [
              { login: 'carol', user: 'gitea:carol', state: 'APPROVED', commit: C, eligible: true },
              {
                login: '<img src=x onerror=alert(1)>',
                user: 'gitea:mallory',
                state: 'APPROVED',
                commit: 'd'.repeat(40),
                eligible: false,
                why: '<b>given on another commit</b>',
              },
            ],
            message: '<script>alert(1)</script> waiting for the merge',
          },
        },
        [ALICE],
        { approvers: [{ user: 'gitea:carol', person: 'carol', counted: true }] },
      );

    it('links the pull request and says which reviews count and why the others do not, as text', async () => {
      const { container } = renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
        api: fakeApi({ getPlan: async () => throughPr('https://gitea.example.com/platform/gitops/pulls/12') }),
        permission: 'allow',
      });
      const section = await screen.findByTestId('pull-request');
      const link = within(section).getByRole('link', { name: 'Pull request #12' });
      expect(link.getAttribute('href')).toBe('https://gitea.example.com/platform/gitops/pulls/12');
      expect(screen.getByTestId('pull-request-head').textContent).toBe(
        'Pull request #12 open (platform/gitops: kpromo/shop-prod-1 into main) · 1 of 2 reviews count',
      );
      expect(
        within(screen.getByTestId('pull-request-reviews'))
          .getAllByRole('listitem')
          .map((li) => li.textContent),
      ).toEqual([
        'carol (gitea:carol) APPROVED: counts',
        '<img src=x onerror=alert(1)> (gitea:mallory) APPROVED: does not count (<b>given on another commit</b>)',
      ]);
      expect(screen.getByTestId('pull-request-message').textContent).toBe(
        '<script>alert(1)</script> waiting for the merge',
      );
      // The forge's text stays text: no element was made of it.
      expect(container.querySelector('img, script, b')).toBeNull();
    });

    it('names the pull request without a link when its URL is not http(s)', async () => {
      renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
        api: fakeApi({ getPlan: async () => throughPr('javascript:alert(1)') }),
        permission: 'allow',
      });
      const section = await screen.findByTestId('pull-request');
      expect(within(section).queryByRole('link')).toBeNull();
      expect(screen.getByTestId('pull-request-head').textContent).toMatch(/^Pull request #12 open/);
    });

    it('shows nothing of a pull request for a plan delivered without one', async () => {
      renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
        api: fakeApi({ getPlan: async () => approvedPlan({ phase: 'Promoting' }) }),
        permission: 'allow',
      });
      await screen.findByTestId('plan-gate');
      expect(screen.queryByTestId('pull-request')).toBeNull();
    });
  });

  it('shows per-app progress live by polling, and failures with their reasons', async () => {
    const states: PromotionPlan[] = [
      approvedPlan({
        phase: 'Promoting',
        apps: [
          { application: 'checkout', phase: 'Copying' },
          { application: 'cart', phase: 'Pending' },
        ],
      }),
      approvedPlan({
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
      }),
    ];
    let i = 0; // the test moves the controller on; the view must pick it up by polling
    const api = fakeApi({ getPlan: async () => states[i] });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={30} />, {
      api: api,
      permission: 'allow',
      user: 'user:default/carol',
    });
    expect((await screen.findByTestId('phase-checkout')).textContent).toBe('Copying');
    // Started: nobody approves any more, not even someone who has not approved.
    expect(screen.queryByRole('button', { name: 'Approve & promote' })).toBeNull();
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
    // Bound to the plan shown: its uid goes with the rollback.
    await waitFor(() =>
      expect(api.calls).toContain(
        'rollbackPlan("shop","shop-prod-1",{"approve":true,"uid":"6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11"})',
      ),
    );
  });

  it("shows each app's step in the release's order while the plan awaits approval, and none without an order", async () => {
    const awaiting = plan(
      {},
      {
        phase: 'Pending',
        gate: { approved: false, required: 1 },
        order: [{ application: 'cart', after: ['checkout'] }],
      },
    );
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => awaiting }),
      permission: 'allow',
    });
    expect((await screen.findByTestId('step-cart')).textContent).toBe('step 2, after checkout');
    expect(screen.getByTestId('step-checkout').textContent).toBe('step 1');
    expect(screen.getByRole('button', { name: 'Approve & promote' })).toBeTruthy();
    cleanup();
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => plan({}, { phase: 'Pending', gate: { approved: false, required: 1 } }) }),
      permission: 'allow',
    });
    expect(await screen.findByTestId('phase-cart')).toBeTruthy();
    expect(screen.queryByTestId('step-cart')).toBeNull();
  });

  it('says where the order of the release holds an app: what it waits for, the failed dependency that held it', async () => {
    const waiting = approvedPlan({
      phase: 'Promoting',
      apps: [
        { application: 'checkout', phase: 'RollingOut' },
        { application: 'cart', phase: 'Pending', reason: 'WaitingForDependency', waitsFor: ['checkout'] },
      ],
    });
    const api = fakeApi({ getPlan: async () => waiting });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, { api, permission: 'allow' });
    expect((await screen.findByTestId('order-cart')).textContent).toBe('waits for checkout');
    expect(screen.queryByTestId('order-checkout')).toBeNull();
    cleanup();
    const held = approvedPlan({
      phase: 'Incomplete',
      apps: [
        { application: 'checkout', phase: 'Failed', reason: 'ImageNotFound' },
        { application: 'cart', phase: 'Failed', reason: 'DependencyFailed', heldBy: 'checkout' },
      ],
    });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => held }),
      permission: 'allow',
    });
    expect((await screen.findByTestId('order-cart')).textContent).toBe('held: dependency checkout failed');
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

  it('renders the progress the backend sent with the plan, not its own projection of status', async () => {
    const p = approvedPlan({ phase: 'Pending' });
    const progress = {
      ...planProgress(p),
      succeeded: 1,
      lineStopped: { lineStop: 'shop/inc-7', reason: 'INC-7', stoppedBy: 'bob' },
    };
    renderWith(<PlanDetails plan={p} progress={progress} onChange={() => undefined} />, {
      api: fakeApi(),
      permission: 'allow',
    });
    expect((await screen.findByTestId('line-stopped')).textContent).toContain(
      'bob stopped the line (LineStop shop/inc-7)',
    );
    expect(screen.getByTestId('plan-counts').textContent).toBe('1 succeeded · 0 failed · 2 apps');
  });

  it('shows the org-level gates that decide instead of the flow, naming the OrgPolicy, its rule and field', async () => {
    const p = plan({}, { phase: 'Pending' });
    const rule = {
      orgPolicy: 'kpromo-system/platform',
      rule: 'prod-gates',
      field: 'spec.rules[0].approvals.minCount',
      requires: '2 approvals at least',
      flowHas: 'stages[2].approvers.count 1',
    };
    const progress = {
      ...planProgress(p),
      requiredApprovals: 2,
      // A rule the flow already meets is not shown.
      orgRules: [
        { ...rule, stricter: true },
        { ...rule, field: 'spec.rules[0].minSoakTime', requires: 'soak 1h at least', stricter: false },
      ],
    };
    renderWith(<PlanDetails plan={p} progress={progress} onChange={() => undefined} />, {
      api: fakeApi(),
      permission: 'allow',
    });
    const alert = (await screen.findByTestId('org-rules')).textContent ?? '';
    expect(alert).toContain(
      'OrgPolicy kpromo-system/platform rule prod-gates (spec.rules[0].approvals.minCount) requires 2 approvals at least; the flow has stages[2].approvers.count 1',
    );
    expect(alert).not.toContain('minSoakTime');
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

  it('says from the gate why a plan waits, a freeze before missing approvals as every door says it; nothing once it runs', async () => {
    const named = (p: PromotionPlan, name: string, at: string) => ({
      ...p,
      metadata: { ...p.metadata, name, creationTimestamp: at },
    });
    const plans = [
      named(plan({}, { phase: 'Pending' }), 'p-new', '2026-12-02T10:05:00Z'),
      named(
        approvedPlan({ phase: 'Pending' }, [ALICE], {
          frozen: { window: 'friday-freeze', until: new Date(Date.now() + 3600_000).toISOString() },
        }),
        'p-frozen',
        '2026-12-02T10:04:00Z',
      ),
      named(
        approvedPlan({ phase: 'Pending' }, [ALICE], { eligibleAt: new Date(Date.now() + 3600_000).toISOString() }),
        'p-soak',
        '2026-12-02T10:03:00Z',
      ),
      named(approvedPlan({ phase: 'Promoting' }), 'p-running', '2026-12-02T10:02:00Z'),
      // Frozen and not approved yet: the freeze holds it first (the controller's order, the CLI's and MCP's word).
      named(
        plan({}, { phase: 'Pending', gate: { approved: false, required: 1, frozen: { window: 'friday-freeze' } } }),
        'p-frozen-unapproved',
        '2026-12-02T10:01:30Z',
      ),
      // An older plan approved by spec alone (no gate) that finished is not "awaiting approval".
      named(plan({}, { phase: 'Complete' }), 'p-done', '2026-12-02T10:01:00Z'),
    ];
    renderWith(<PlansPage />, { api: fakeApi({ listPlans: async () => plans }), permission: 'deny' });
    await screen.findByText('p-new');
    const rows = screen
      .getAllByRole('row')
      .slice(1)
      .map((r) => within(r).getAllByRole('gridcell')[0]?.textContent);
    expect(rows).toEqual([
      'promote (awaiting approval)',
      'promote (frozen)',
      'promote (soaking)',
      'promote',
      'promote (frozen)',
      'promote',
    ]);
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
