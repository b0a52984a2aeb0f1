// @vitest-environment jsdom
import { cleanup, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { PlanView } from '../src/components/PlanView';
import { thresholdOf } from '../src/components/VerificationChecks';
import { approvedPlan, fakeApi, plan } from './fixtures';
import { renderWith } from './render';

afterEach(cleanup);

const samples = (values: number[], max: number) =>
  values.map((value, i) => ({ at: `2026-12-02T10:0${i}:00Z`, value, ok: value <= max }));

/** The failed release: checkout verified, cart failed its error-rate check and the release went back. */
const failed = approvedPlan({
  phase: 'RolledBack',
  apps: [
    {
      application: 'checkout',
      phase: 'RolledBack',
      reason: 'Verified',
      written: true,
      verification: {
        verdict: 'Passed',
        startedAt: '2026-12-02T10:00:00Z',
        endsAt: '2026-12-02T10:05:00Z',
        onFailure: 'rollbackRelease',
        checks: [
          {
            name: 'error-rate',
            kind: 'prometheus',
            query: 'sum(rate(errors{app="checkout"}[2m]))',
            condition: '≤ 0.05',
            verdict: 'Passed',
            samples: samples([0.01, 0.02, 0.01], 0.05),
            measured: 3,
            failures: 0,
          },
        ],
      },
    },
    {
      application: 'cart',
      phase: 'RolledBack',
      reason: 'VerificationFailed',
      written: true,
      message: 'verification failed: check error-rate failed (last value 0.2, must be ≤ 0.05)',
      verification: {
        verdict: 'Failed',
        startedAt: '2026-12-02T10:06:00Z',
        endsAt: '2026-12-02T10:11:00Z',
        onFailure: 'rollbackRelease',
        checks: [
          {
            name: 'error-rate',
            kind: 'prometheus',
            query: 'sum(rate(errors{app="cart"}[2m]))',
            condition: '≤ 0.05',
            verdict: 'Failed',
            samples: samples([0.2], 0.05),
            measured: 1,
            failures: 1,
            message: '1 failed measurement(s), limit 0',
          },
        ],
      },
    },
  ],
  automaticRollbacks: [
    {
      plan: 'shop-prod-1-rollback-x7k2p',
      planUID: 'uid-rb-x7k2p',
      scope: 'release',
      application: 'cart',
      check: 'error-rate',
      message: 'check error-rate failed (last value 0.2, must be ≤ 0.05)',
      at: '2026-12-02T10:06:30Z',
    },
  ],
});

describe('verification in the plan view', () => {
  it("shows each app's checks with query, condition, values over the window as a chart, and verdict", async () => {
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => failed }),
      permission: 'allow',
    });
    const cart = await screen.findByTestId('check-cart-error-rate');
    expect(cart.textContent).toContain('error-rate');
    expect(cart.textContent).toContain('Failed');
    expect(cart.textContent).toContain('last 0.2, must be ≤ 0.05');
    expect(cart.textContent).toContain('sum(rate(errors{app="cart"}[2m]))');
    const chart = within(screen.getByTestId('check-checkout-error-rate')).getByRole('img');
    expect(chart.getAttribute('aria-label')).toBe('error-rate: 0.01, 0.02, 0.01 (must be ≤ 0.05)');
    expect(screen.getByTestId('verification-cart').textContent).toContain('on failure: rollbackRelease');
  });

  it("shows a job check's Job, how long it ran and the tail of its log", async () => {
    const withJob = structuredClone(failed);
    withJob.status!.apps![0]!.verification!.checks.push({
      name: 'e2e',
      kind: 'job',
      query: 'Job shop/kpromo-checkout-e2e-0123456789',
      condition: 'Job completes',
      verdict: 'Passed',
      samples: [{ at: '2026-12-02T10:01:00Z', ok: true }],
      durationSeconds: 42,
      output: '12 passed\nok',
      message: 'Job kpromo-checkout-e2e-0123456789 succeeded in 42s',
    });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => withJob }),
      permission: 'allow',
    });
    const check = await screen.findByTestId('check-checkout-e2e');
    expect(check.textContent).toContain('must be Job completes');
    expect(check.textContent).toContain('ran 42s');
    expect(check.textContent).toContain('Job shop/kpromo-checkout-e2e-0123456789');
    expect(screen.getByTestId('output-checkout-e2e').textContent).toBe('12 passed\nok');
  });

  it('says the release was rolled back automatically, by which plan and because of which check', async () => {
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => failed }),
      permission: 'allow',
    });
    const banner = await screen.findByTestId('automatic-rollback');
    expect(banner.textContent).toContain('shop-prod-1-rollback-x7k2p');
    expect(banner.textContent).toContain('cart failed check error-rate');
    expect(within(banner).getByRole('link', { name: 'shop-prod-1-rollback-x7k2p' }).getAttribute('href')).toContain(
      'shop-prod-1-rollback-x7k2p',
    );
  });

  it('links a rollback plan to the failed check that caused it', async () => {
    const rb = plan(
      { action: 'rollback', rollbackOf: 'shop-prod-1', candidates: [] },
      { phase: 'Promoting', gate: { approved: true, required: 0 } },
    );
    rb.metadata.name = 'shop-prod-1-rollback-x7k2p';
    rb.metadata.uid = 'uid-rb-x7k2p'; // bound by the uid the failed plan records, not by its name
    renderWith(<PlanView namespace="shop" name="shop-prod-1-rollback-x7k2p" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => rb, listPlans: async () => [failed, rb] }),
      permission: 'allow',
    });
    const cause = await screen.findByTestId('rollback-cause');
    expect(cause.textContent).toContain('Started automatically: cart failed check error-rate in shop-prod-1');
    expect(within(cause).getByRole('link', { name: 'shop-prod-1' })).toBeTruthy();
  });

  it('shows a banner while the line is stopped, with who and why', async () => {
    const held = approvedPlan({ phase: 'Pending' }, undefined, {
      lineStopped: { lineStop: 'shop/inc-42', reason: 'INC-42: checkout 5xx', stoppedBy: 'alice' },
    });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => held }),
      permission: 'allow',
    });
    const banner = await screen.findByTestId('line-stopped');
    expect(banner.textContent).toContain('The line is stopped');
    expect(banner.textContent).toContain('alice stopped the line (LineStop shop/inc-42): INC-42: checkout 5xx');
  });
});

describe('thresholdOf', () => {
  it('reads the bound a condition names', () => {
    expect(thresholdOf('≤ 0.05')).toBe(0.05);
    expect(thresholdOf('≥ 10 and ≤ 20')).toBe(10);
    expect(thresholdOf('≤ 1.5 × previous')).toBeUndefined();
    expect(thresholdOf(undefined)).toBeUndefined();
  });
});
