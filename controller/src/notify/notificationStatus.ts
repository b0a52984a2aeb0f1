import {
  MAX_NOTIFICATION_THREADS,
  type Notification,
  type NotificationStatus,
  type NotificationThread,
} from '@kpromo/api';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import { isConflict, isNotFound, type KubeRest } from '../kube/rest.js';
import type { Logger } from '../observability/logger.js';
import type { DeliveryOutcome } from './retryingRequest.js';

/** A change to one Notification's status, applied to the freshest copy (so concurrent changes merge). */
export type StatusChange = (s: NotificationStatus) => NotificationStatus;

/** Where the notifier records outcomes and thread anchors. */
export interface NotificationStatusSink {
  update(n: Notification, change: StatusChange): void;
  flush?(): Promise<void>;
}

/** Pure: the counters after one delivery; lastError is the latest failure's and goes away with the next success. */
export function countOutcome(s: NotificationStatus, o: DeliveryOutcome, time: string): NotificationStatus {
  if (o.skipped) return { ...s, skipped: (s.skipped ?? 0) + 1 };
  if (o.ok) {
    const { lastError: _, ...rest } = s;
    return { ...rest, delivered: (s.delivered ?? 0) + 1, lastDeliveryTime: time };
  }
  return { ...s, failed: (s.failed ?? 0) + 1, lastError: (o.error ?? 'delivery failed').slice(0, 1024) };
}

/** Pure: `threads` with `t` in place of its plan's entry, newest `max` kept (the oldest are forgotten). */
export function withThread(
  threads: NotificationThread[] | undefined,
  t: NotificationThread,
  max = MAX_NOTIFICATION_THREADS,
): NotificationThread[] {
  return [...(threads ?? []).filter((x) => x.plan !== t.plan), t]
    .sort((a, b) => a.time.localeCompare(b.time))
    .slice(-max);
}

export const withoutThread = (threads: NotificationThread[] | undefined, plan: string) =>
  (threads ?? []).filter((x) => x.plan !== plan);

interface Queue {
  n: Notification;
  changes: StatusChange[];
  running?: Promise<void>;
}

/**
 * Writes Notification statuses through the status subresource: changes to one Notification are
 * queued, applied together to a fresh read and PUT with its resourceVersion (a 409 re-reads and
 * re-applies). Best effort: a failure is logged, never raised into a delivery.
 */
export class NotificationStatusWriter implements NotificationStatusSink {
  private readonly queues = new Map<string, Queue>();

  constructor(
    private readonly rest: Pick<KubeRest, 'getOrUndefined' | 'put'>,
    private readonly log?: Pick<Logger, 'warn'>,
  ) {}

  update(n: Notification, change: StatusChange): void {
    const key = `${n.metadata.namespace}/${n.metadata.name}`;
    let q = this.queues.get(key);
    if (!q) {
      q = { n, changes: [] };
      this.queues.set(key, q);
    }
    q.changes.push(change);
    if (!q.running) {
      const run = this.drain(key, q).finally(() => {
        q.running = undefined;
        if (!q.changes.length && this.queues.get(key) === q) this.queues.delete(key);
      });
      q.running = run;
    }
  }

  async flush(): Promise<void> {
    while ([...this.queues.values()].some((q) => q.running))
      await Promise.allSettled([...this.queues.values()].map((q) => q.running));
  }

  private async drain(key: string, q: Queue): Promise<void> {
    while (q.changes.length) {
      const changes = q.changes.splice(0);
      try {
        await this.write(q.n, changes);
      } catch (err) {
        this.log?.warn({ notification: key, err: String(err) }, 'notification status not written');
      }
    }
  }

  private async write(n: Notification, changes: StatusChange[]): Promise<void> {
    const path = resourcePath(KPROMO_TYPES.Notification, n.metadata.namespace, n.metadata.name);
    for (let attempt = 0; ; attempt++) {
      const fresh = await this.rest.getOrUndefined<Notification>(path);
      // Deleted, or recreated under the same name: these outcomes were not its.
      if (!fresh || (n.metadata.uid && fresh.metadata.uid !== n.metadata.uid)) return;
      const status = changes.reduce((s, c) => c(s), fresh.status ?? {});
      try {
        await this.rest.put(`${path}/status`, { ...fresh, status });
        return;
      } catch (e) {
        if (isNotFound(e)) return;
        if (!isConflict(e) || attempt >= 5) throw e;
      }
    }
  }
}
