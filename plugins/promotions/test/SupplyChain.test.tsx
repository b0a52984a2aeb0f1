// @vitest-environment jsdom
import { cleanup, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { PlanView } from '../src/components/PlanView';
import { recordSummary } from '../src/components/SupplyChain';
import { approvedPlan, fakeApi, plan } from './fixtures';
import { renderWith } from './render';

afterEach(cleanup);

const judged = (application: string, digest: string, verdict: 'Verified' | 'Unsigned', message: string) => ({
  application,
  digest,
  verdict,
  mode: 'Enforce' as const,
  checks: [],
  message,
  checkedAt: '2026-12-02T10:00:00Z',
});

describe('signatures in the plan view', () => {
  it('shows each candidate signed or not while the plan waits for approval', async () => {
    const base = plan();
    const [checkout, cart] = base.spec.candidates;
    const waiting = plan(
      {},
      {
        phase: 'Pending',
        candidateSignatures: [
          judged('checkout', checkout.from.digest, 'Verified', 'signature by release-keys/cosign.pub'),
          judged('cart', cart.from.digest, 'Unsigned', 'signature: none found'),
        ],
      },
    );
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => waiting }),
      permission: 'allow',
    });
    expect((await screen.findByTestId('supply-chain-checkout')).textContent).toBe(
      '✔ Signed: signature by release-keys/cosign.pub',
    );
    expect(screen.getByTestId('supply-chain-cart').textContent).toBe('✖ Not signed: signature: none found');
  });

  it('after the copy: the verdict that let it through and the signed promotion record', async () => {
    const done = approvedPlan({
      phase: 'Complete',
      apps: [
        {
          application: 'checkout',
          phase: 'Succeeded',
          signature: {
            digest: 'x',
            verdict: 'Verified',
            mode: 'Enforce',
            checks: [],
            message: 'signature by new-keys/cosign.pub',
            checkedAt: '2026-12-02T10:00:00Z',
          },
          attestation: {
            predicateType: 'https://kpromo.dev/promotion/v1',
            manifestDigest: `sha256:${'e'.repeat(64)}`,
            signedBy: 'kpromo-signing/key.pem',
          },
        },
      ],
    });
    renderWith(<PlanView namespace="shop" name="shop-prod-1" pollMs={10_000} />, {
      api: fakeApi({ getPlan: async () => done }),
      permission: 'allow',
    });
    const state = await screen.findByTestId('supply-chain-checkout');
    expect(state.textContent).toContain('✔ Signed: signature by new-keys/cosign.pub');
    expect(state.textContent).toContain('Promotion attested: signed by kpromo-signing/key.pem (sha256:eeeeeeeeeeee…)');
    expect(screen.queryByTestId('supply-chain-cart')).toBeNull();
  });

  it("sums up an app's record for the entity page: signed, approved by whom, record signed", () => {
    const done = approvedPlan({
      phase: 'Complete',
      apps: [
        {
          application: 'checkout',
          phase: 'Succeeded',
          signature: { digest: 'x', verdict: 'Verified', mode: 'Enforce', checks: [], message: 'm', checkedAt: 't' },
          attestation: { predicateType: 'p', manifestDigest: 'sha256:e', signedBy: 'kpromo-signing/key.pem' },
        },
      ],
    });
    expect(recordSummary(done, 'checkout')).toBe(
      'signed · approved by user:default/alice · record signed by kpromo-signing/key.pem',
    );
    expect(recordSummary(done, 'cart')).toBe('approved by user:default/alice');
    expect(recordSummary(plan(), 'cart')).toBe('');
  });
});
