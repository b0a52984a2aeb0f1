import type { PromotionPlan } from '@kpromo/api';
import type { HistoryEntry } from '@kpromo/contract';

/** A history entry with the given fields; the rest fixed (namespace shop, flow main, team t1, app a, prod). */
export function entry(key: string, o: Partial<HistoryEntry> & Pick<HistoryEntry, 'finishedAt'>): HistoryEntry {
  return {
    key,
    namespace: 'shop',
    flow: 'main',
    application: 'a',
    environment: 'prod',
    team: 't1',
    action: 'promote',
    to: { tag: key },
    approvedBy: [],
    result: 'Succeeded',
    deployed: (o.result ?? 'Succeeded') !== 'Failed',
    plan: `plan-${key}`,
    source: 'log',
    ...o,
  };
}

/** A finished plan with the given app progress. */
export function plan(
  apps: NonNullable<NonNullable<PromotionPlan['status']>['apps']>,
  o: { name?: string; uid?: string; spec?: Partial<PromotionPlan['spec']>; phase?: string } = {},
): PromotionPlan {
  return {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name: o.name ?? 'p1', namespace: 'shop', uid: o.uid ?? 'uid-1' },
    spec: { flow: 'main', from: 'stable', to: 'prod', candidates: [], ...o.spec },
    status: { phase: (o.phase ?? 'Complete') as 'Complete', apps },
  };
}
