import type { PromotionPlan } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { soakingSince, verifiedAt } from '../../src/verification/verifiedSince.js';

const plan = (to: string, phase: string, digest: string, finishedAt: string, verdict = 'Passed') =>
  ({
    metadata: { name: `p-${finishedAt}` },
    spec: { flow: 'f', from: 'dev', to, candidates: [] },
    status: {
      apps: [
        {
          application: 'web',
          phase,
          digest,
          verification: { verdict, startedAt: '', endsAt: '', finishedAt, checks: [] },
        },
      ],
    },
  }) as unknown as PromotionPlan;

describe('verifiedAt / soakingSince', () => {
  it('is the latest passed verification of that digest in that environment', () => {
    const plans = [
      plan('stable', 'Succeeded', 'sha256:a', '2026-12-05T10:00:00Z'),
      plan('stable', 'Succeeded', 'sha256:a', '2026-12-05T11:00:00Z'),
      plan('stable', 'Succeeded', 'sha256:b', '2026-12-05T12:00:00Z'),
      plan('prod', 'Succeeded', 'sha256:a', '2026-12-05T13:00:00Z'),
      plan('stable', 'Failed', 'sha256:a', '2026-12-05T14:00:00Z', 'Failed'),
    ];
    expect(verifiedAt(plans, 'web', 'stable', 'sha256:a')?.toISOString()).toBe('2026-12-05T11:00:00.000Z');
    expect(verifiedAt(plans, 'web', 'dev', 'sha256:a')).toBeUndefined();
  });

  it('moves healthySince to the end of verification, never earlier', () => {
    const v = { environment: 'stable', health: 'Healthy' as const, healthySince: '2026-12-05T10:00:00Z' };
    expect(soakingSince(v, new Date('2026-12-05T10:05:00Z'))?.healthySince).toBe('2026-12-05T10:05:00.000Z');
    expect(soakingSince(v, new Date('2026-12-05T09:00:00Z'))).toBe(v);
    expect(soakingSince(v, undefined)).toBe(v);
  });
});
