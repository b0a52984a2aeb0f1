import type { AppProgress, NotificationEvent, PromotionPlan } from '@kpromo/api';
import { spanEvent } from '../../observability/tracing.js';
import { iso } from '../time.js';
import type { PlanEvent, PromotionDeps } from './deps.js';

/** What a plan tells the world, besides its status: Kubernetes Events on it and release notifications. */
export interface PlanAnnouncer {
  event(type: 'Normal' | 'Warning', reason: string, message: string): void;
  notify(type: NotificationEvent, extra?: Partial<PlanEvent>): void;
  /** An app failed (its reason and message recorded): a Warning event and an AppFailed notification. */
  appFailed(ap: AppProgress, cluster?: string): void;
}

/** Both are best effort and never block the reconcile (the recorder and the providers deliver in the background). */
export function planAnnouncer(
  deps: Pick<PromotionDeps, 'events' | 'notify'>,
  plan: PromotionPlan,
  ref: { namespace: string; name: string; stored(): PromotionPlan },
  now: () => Date,
): PlanAnnouncer {
  const event: PlanAnnouncer['event'] = (type, reason, message) =>
    void deps.events?.record(ref.stored(), type, reason, message);
  const notify: PlanAnnouncer['notify'] = (type, extra = {}) => {
    spanEvent(`kpromo.${type}`, {
      'kpromo.plan': `${ref.namespace}/${ref.name}`,
      ...(extra.application ? { 'kpromo.app': extra.application } : {}),
      ...(extra.digest ? { 'kpromo.digest': extra.digest } : {}),
    });
    deps.notify?.({
      type,
      namespace: ref.namespace,
      plan: ref.name,
      flow: plan.spec.flow,
      from: plan.spec.from,
      to: plan.spec.to,
      time: iso(now()),
      ...extra,
    });
  };
  return {
    event,
    notify,
    appFailed: (ap, cluster) => {
      const where = cluster ? ` in cluster ${cluster}` : '';
      event('Warning', 'AppFailed', `${ap.application}${where}: ${ap.reason}: ${ap.message}`);
      notify('AppFailed', {
        application: ap.application,
        tag: ap.targetTag,
        digest: ap.digest,
        message: cluster ? `cluster ${cluster}: ${ap.message}` : ap.message,
        ...(cluster ? { clusters: [cluster] } : {}),
      });
    },
  };
}
