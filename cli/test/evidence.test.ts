import { describe, expect, it } from 'vitest';
import { evidenceLines, planText } from '../src/views.js';
import { plan } from './fixtures.js';

const sample = (value: number | undefined, i: number) => ({
  at: `2026-01-01T10:0${i}:00Z`,
  ...(value === undefined ? {} : { value }),
});

describe('plan get: the evidence in a plan status', () => {
  it("lists each app's checks with verdict, last value, condition and values, and the rollback they caused", () => {
    const p = plan(['cart', 'web'], {
      phase: 'RolledBack',
      apps: [
        {
          application: 'cart',
          phase: 'RolledBack',
          reason: 'VerificationFailed',
          verification: {
            verdict: 'Failed',
            startedAt: '2026-01-01T10:00:00Z',
            endsAt: '2026-01-01T10:05:00Z',
            onFailure: 'rollbackRelease',
            checks: [
              {
                name: 'error-rate',
                kind: 'prometheus',
                condition: '≤ 0.05',
                verdict: 'Failed',
                samples: [0.01, undefined, 0.2].map(sample),
                message: '1 failed measurement(s), limit 0',
              },
              { name: 'smoke', kind: 'http', condition: 'answers 200', verdict: 'Passed', samples: [sample(200, 0)] },
            ],
          },
        },
        { application: 'web', phase: 'Failed', reason: 'Halted' },
      ],
      automaticRollbacks: [
        { plan: 'p1-rollback', scope: 'release', application: 'cart', check: 'error-rate', message: 'm', at: 't' },
      ],
    });
    expect(evidenceLines(p)).toEqual([
      'verification:',
      '  cart: Failed (on failure: rollbackRelease)',
      '    error-rate: Failed, last 0.2 (must be ≤ 0.05); values 0.01, 0.2; 1 failed measurement(s), limit 0',
      '    smoke: Passed, last 200 (must be answers 200); values 200',
      'rolled back automatically by p1-rollback: cart failed check error-rate',
    ]);
    expect(planText(p, new Date('2026-01-01T11:00:00Z'))).toContain('    error-rate: Failed, last 0.2');
  });

  it("shows a job check's Job, how long it ran and its log tail, and says when it had no logs", () => {
    const p = plan(['web'], {
      phase: 'Promoting',
      apps: [
        {
          application: 'web',
          phase: 'Verifying',
          verification: {
            verdict: 'Running',
            startedAt: '2026-01-01T10:00:00Z',
            endsAt: '2026-01-01T10:05:00Z',
            checks: [
              {
                name: 'e2e',
                kind: 'job',
                condition: 'Job completes',
                verdict: 'Passed',
                query: 'Job shop/kpromo-web-e2e-0123456789',
                durationSeconds: 42,
                output: '12 passed\nok',
                message: 'Job kpromo-web-e2e-0123456789 succeeded in 42s',
                samples: [{ at: '2026-01-01T10:01:00Z', ok: true }],
              },
              {
                name: 'smoke',
                kind: 'job',
                condition: 'Job completes',
                verdict: 'Running',
                message: 'Job kpromo-web-smoke-0123456789 running',
              },
            ],
          },
        },
      ],
    });
    expect(evidenceLines(p)).toEqual([
      'verification:',
      '  web: Running',
      '    e2e: Passed (must be Job completes), ran 42s; Job kpromo-web-e2e-0123456789 succeeded in 42s',
      '      | 12 passed',
      '      | ok',
      '    smoke: Running (must be Job completes); Job kpromo-web-smoke-0123456789 running',
    ]);
  });

  it('says who stopped the line while it holds the plan, and nothing once a hotfix overrode it', () => {
    const held = plan(['cart'], {
      phase: 'Pending',
      gate: {
        approved: true,
        required: 1,
        lineStopped: { lineStop: 'team-a/inc-1', reason: 'INC-1', stoppedBy: 'rita' },
      },
    });
    expect(evidenceLines(held)).toEqual(['line stopped by rita (LineStop team-a/inc-1): INC-1']);
    const hotfix = plan(['cart'], {
      phase: 'Pending',
      gate: {
        approved: true,
        required: 1,
        lineStopped: { lineStop: 'team-a/inc-1', reason: 'INC-1', stoppedBy: 'rita', overriddenBy: 'sam' },
      },
    });
    expect(evidenceLines(hotfix)).toEqual([]);
  });

  it('shows each candidate signature verdict before approval, the copy-time verdict after, and the attestations signed', () => {
    const digest = plan(['cart']).spec.candidates[0].from.digest;
    const judged = {
      digest,
      mode: 'Enforce' as const,
      checks: [],
      checkedAt: '2026-01-01T10:00:00Z',
    };
    const waiting = plan(['cart', 'web'], {
      phase: 'Pending',
      candidateSignatures: [
        { application: 'cart', ...judged, verdict: 'Verified', message: 'signature by keys/cosign.pub' },
        { application: 'web', ...judged, verdict: 'Unsigned', mode: 'Audit', message: 'signature: none found' },
      ],
    });
    expect(evidenceLines(waiting)).toEqual([
      'signatures:',
      '  cart: Verified: signature by keys/cosign.pub',
      '  web: Unsigned (audit only): signature: none found',
    ]);
    const done = plan(['cart'], {
      phase: 'Complete',
      candidateSignatures: [{ application: 'cart', ...judged, verdict: 'Error', message: 'could not check' }],
      apps: [
        {
          application: 'cart',
          phase: 'Succeeded',
          signature: { ...judged, verdict: 'Verified', message: 'signature by keys/new.pub' },
          attestation: {
            predicateType: 'https://kpromo.dev/promotion/v1',
            manifestDigest: 'sha256:abc',
            signedBy: 'kpromo/key.pem',
          },
        },
      ],
    });
    expect(evidenceLines(done)).toEqual([
      'signatures:',
      '  cart: Verified: signature by keys/new.pub',
      'promotion attestations:',
      '  cart: sha256:abc signed by kpromo/key.pem',
    ]);
  });
});
