import {
  isRollback as isRollbackPlan,
  type PlanProgress,
  type PromotionPlan,
  shortDigest,
} from '@kpromo/plugin-promotions-react';
import type { PlanChange } from './Confirm';

/** A version as a person reads it: the tag, else the short digest. */
export const versionLabel = (v: { tag?: string; digest?: string } | undefined) => v?.tag ?? shortDigest(v?.digest);

/**
 * What approving the plan will change: per application, the target environment's version before
 * and after. A rollback restores what its original plan replaced: before it runs, that comes from
 * the original plan (`original`); once running, from its own status (`previous` is what ran before
 * the rollback, `targetTag` what it restores).
 */
export function planChanges(plan: PromotionPlan, original?: PromotionPlan): PlanChange[] {
  if (isRollbackPlan(plan)) {
    const own = plan.status?.apps ?? [];
    if (own.length)
      return own.map((a) => ({ application: a.application, from: versionLabel(a.previous), to: a.targetTag }));
    return (original?.status?.apps ?? [])
      .filter((a) => a.written)
      .map((a) => ({ application: a.application, from: a.targetTag, to: versionLabel(a.previous) }));
  }
  return plan.spec.candidates.map((c) => ({ application: c.application, from: versionLabel(c.to), to: c.from.tag }));
}

/** The rollback plan of `plan` among `plans`, if someone created one. */
export function rollbackOf(plan: PromotionPlan, plans: PromotionPlan[] | undefined): PromotionPlan | undefined {
  return plans?.find(
    (p) =>
      isRollbackPlan(p) &&
      p.spec.rollbackOf === plan.metadata.name &&
      (p.metadata.namespace ?? 'default') === (plan.metadata.namespace ?? 'default'),
  );
}

/** What a screen reader hears when the plan moves on: phase and how many applications are done. */
export function progressAnnouncement(g: PlanProgress): string {
  const done = g.apps.filter((a) => ['Succeeded', 'Failed', 'RolledBack'].includes(a.phase)).length;
  const running = g.apps.find((a) => ['Copying', 'Writing', 'RollingOut', 'Verifying'].includes(a.phase));
  return [
    `Plan ${g.name}: ${g.phase}.`,
    g.total ? `${done} of ${g.total} applications done (${g.succeeded} succeeded, ${g.failed} failed).` : '',
    running ? `${running.application} is ${running.phase}.` : '',
  ]
    .filter(Boolean)
    .join(' ');
}
