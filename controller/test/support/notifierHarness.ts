import type { Notification, NotificationSpec, NotificationStatus } from '@kpromo/api';
import type { SecretObject } from '../../src/credentials/secrets.js';
import type { ReleaseEvent } from '../../src/extension/notificationProvider.js';
import { Egress, type GuardedResponse } from '../../src/net/guardedFetch.js';
import type { ImageCommitSource } from '../../src/notify/imageCommits.js';
import type { NotificationStatusSink, StatusChange } from '../../src/notify/notificationStatus.js';
import { Notifier } from '../../src/notify/notifier.js';
import type { DeliveryOutcome } from '../../src/notify/retryingRequest.js';

/** A Notification in team-a subscribing to every event, with one target. */
export function notificationOf(
  name: string,
  target: Partial<NotificationSpec>,
  status?: NotificationStatus,
): Notification {
  return {
    apiVersion: 'promotions.kpromo.dev/v1alpha1' as Notification['apiVersion'],
    kind: 'Notification',
    metadata: { name, namespace: 'team-a', uid: `uid-${name}` },
    spec: {
      events: ['PlanApproved', 'PlanWaiting', 'AppPromoted', 'AppFailed', 'PlanComplete', 'PlanIncomplete'],
      ...target,
    },
    ...(status ? { status } : {}),
  };
}

/** Events of one plan, in the order a successful promotion emits them. */
export function planEvents(plan = 'shop-42'): ReleaseEvent[] {
  const base = {
    namespace: 'team-a',
    plan,
    flow: 'shop',
    from: 'staging',
    to: 'production',
    time: '2026-01-01T00:00:00Z',
  };
  return [
    { ...base, type: 'PlanApproved' },
    {
      ...base,
      type: 'AppPromoted',
      application: 'cart',
      tag: 'v1.2.0',
      digest: `sha256:${'c'.repeat(64)}`,
      time: '2026-01-01T00:01:00Z',
    },
    { ...base, type: 'PlanComplete', time: '2026-01-01T00:02:00Z' },
  ];
}

/** Status changes applied in memory, in order (what the status writer would PUT). */
export class MemoryStatus implements NotificationStatusSink {
  readonly statuses = new Map<string, NotificationStatus>();
  update(n: Notification, change: StatusChange): void {
    const key = n.metadata.name;
    this.statuses.set(key, change(this.statuses.get(key) ?? {}));
  }
}

/**
 * A Notifier as the controller builds it, with Secrets from maps (`secrets`: "name" → data,
 * `annotations`: "name" → annotations, `labels`: "name" → labels, all in team-a; a Secret without
 * `labels` is labelled promotions.kpromo.dev/credential=true, its destinations are up to
 * `annotations`), loopback allowed and fast retries.
 */
export function testNotifier(
  list: Notification[],
  o: {
    secrets?: Record<string, Record<string, string>>;
    annotations?: Record<string, Record<string, string>>;
    labels?: Record<string, Record<string, string>>;
    commits?: ImageCommitSource;
    status?: MemoryStatus;
  } = {},
) {
  const deliveries: Array<{ name: string; outcome: DeliveryOutcome }> = [];
  const object = (ns: string, name: string): SecretObject | undefined =>
    ns === 'team-a' && o.secrets?.[name]
      ? {
          namespace: ns,
          name,
          type: 'Opaque',
          data: o.secrets[name],
          labels: o.labels?.[name] ?? { 'promotions.kpromo.dev/credential': 'true' },
          annotations: o.annotations?.[name] ?? {},
        }
      : undefined;
  const status = o.status ?? new MemoryStatus();
  const n = new Notifier({
    listNotifications: () => list,
    readSecretObject: async (ns, name) => object(ns, name),
    egress: new Egress({ allowedCidrs: ['127.0.0.1/32'] }),
    status,
    commits: o.commits,
    onDelivery: (x, _ok, _err, outcome) => deliveries.push({ name: x.metadata.name, outcome: outcome! }),
    retryBaseMs: 10,
    retryMaxMs: 1500,
  });
  /** Emits the events one after another, as reconciles do, and waits for every delivery. */
  const run = async (events: ReleaseEvent[]) => {
    for (const e of events) n.emit(e);
    await n.flush();
  };
  return { n, run, deliveries, status };
}

/** An answer as the egress guard returns it (for the pure verdict functions). */
export function guardedAnswer(status: number, body: unknown, headers: Record<string, string> = {}): GuardedResponse {
  return {
    status,
    headers,
    header: (n) => headers[n.toLowerCase()],
    body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
    truncated: false,
  };
}
