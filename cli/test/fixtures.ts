import type { AppProgress, PromotionPlan } from '@kpromo/api';

export const dg = (c: string) => `sha256:${c.repeat(64).slice(0, 64)}`;

/** A dev -> stable plan for `apps` (candidates v2 replacing v1), with the given status. */
export function plan(
  apps: string[],
  status?: PromotionPlan['status'],
  spec: Partial<PromotionPlan['spec']> = {},
): PromotionPlan {
  return {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name: 'p1', namespace: 'team-a', creationTimestamp: '2026-01-01T10:00:00Z' },
    spec: {
      flow: 'main',
      from: 'dev',
      to: 'stable',
      candidates: apps.map((application) => ({
        application,
        from: { tag: 'v2', digest: dg('2') },
        to: { tag: 'v1', digest: dg('1') },
      })),
      requestedBy: 'alice',
      ...spec,
    },
    ...(status ? { status } : {}),
  };
}

export const progress = (application: string, phase: AppProgress['phase'], extra: Partial<AppProgress> = {}) => ({
  application,
  phase,
  targetTag: 'v2',
  previous: { tag: 'v1', digest: dg('1') },
  ...extra,
});
