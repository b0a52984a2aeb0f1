import { MAX_NOTIFICATION_THREADS, type Notification, type NotificationThread } from '@kpromo/api';
import { type NotificationStatusSink, withoutThread, withThread } from './notificationStatus.js';
import type { ThreadAnchor, ThreadAnchors } from './providers/types.js';

/** Notifications whose anchors are kept in memory; the least recently used beyond this are dropped (status keeps them). */
const MAX_NOTIFICATIONS = 1000;

/**
 * Thread anchors of every Notification: in memory for the events that follow right away (before the
 * cache shows the status write), in the Notification's status (at most {@link MAX_NOTIFICATION_THREADS}
 * plans, oldest forgotten first) for a restarted controller. `null` marks an anchor forgotten here
 * that an older status copy may still show.
 */
export class NotificationThreads {
  private readonly memory = new Map<string, Map<string, NotificationThread | null>>();

  constructor(
    private readonly status?: NotificationStatusSink,
    private readonly now: () => Date = () => new Date(),
    private readonly max = MAX_NOTIFICATION_THREADS,
  ) {}

  private plans(n: Notification): Map<string, NotificationThread | null> {
    const key = n.metadata.uid ?? `${n.metadata.namespace}/${n.metadata.name}`;
    let m = this.memory.get(key);
    if (m) this.memory.delete(key); // re-inserted below: most recently used last
    m ??= new Map();
    this.memory.set(key, m);
    if (this.memory.size > MAX_NOTIFICATIONS) this.memory.delete(this.memory.keys().next().value as string);
    return m;
  }

  /** The anchors of one Notification (as the cache has it now). */
  for(n: Notification): ThreadAnchors {
    const plans = this.plans(n);
    return {
      get: (plan, scope) => {
        const t = plans.has(plan) ? plans.get(plan) : n.status?.threads?.find((x) => x.plan === plan);
        return t && t.scope === scope
          ? { scope: t.scope, id: t.id, ...(t.channel ? { channel: t.channel } : {}) }
          : undefined;
      },
      set: (plan, anchor: ThreadAnchor) => {
        const t: NotificationThread = { plan, ...anchor, time: this.now().toISOString() };
        plans.delete(plan);
        plans.set(plan, t);
        while (plans.size > this.max) plans.delete(plans.keys().next().value as string);
        this.status?.update(n, (s) => ({ ...s, threads: withThread(s.threads, t, this.max) }));
      },
      forget: (plan) => {
        plans.delete(plan);
        plans.set(plan, null);
        while (plans.size > this.max) plans.delete(plans.keys().next().value as string);
        this.status?.update(n, (s) => ({ ...s, threads: withoutThread(s.threads, plan) }));
      },
    };
  }
}
