import { randomUUID } from 'node:crypto';
import type { Notification, NotificationEvent } from '@kpromo/api';
import type { Logger } from '../observability/logger.js';
import { metrics } from '../observability/metrics.js';
import { type DeliveryOutcome, deliverWebhook } from './deliverWebhook.js';

export interface ReleaseEvent {
  type: NotificationEvent;
  namespace: string;
  plan: string;
  flow: string;
  from: string;
  to: string;
  application?: string;
  tag?: string;
  digest?: string;
  message?: string;
  time: string;
}

export interface NotifierOptions {
  listNotifications(): Notification[];
  readSecret(namespace: string, name: string, key: string): Promise<string | undefined>;
  logger?: Logger;
  onDelivery?: (n: Notification, ok: boolean, error?: string) => void;
  /** Backoff tuning (tests use small values). */
  retryBaseMs?: number;
  retryMaxMs?: number;
}

/** Key read from spec.webhook.secretRef when it names none. */
export const DEFAULT_SECRET_KEY = 'secret';

/** Notifications in the plan's namespace that subscribe to this event type and flow. */
export function selectNotifications(
  all: Notification[],
  e: Pick<ReleaseEvent, 'type' | 'namespace' | 'flow'>,
): Notification[] {
  return all.filter(
    (n) =>
      (n.metadata.namespace ?? e.namespace) === e.namespace &&
      n.spec.events.includes(e.type) &&
      (!n.spec.flows?.length || n.spec.flows.includes(e.flow)),
  );
}

/** The JSON body receivers get; `id` equals the x-kpromo-delivery header. */
export function webhookPayload(id: string, e: ReleaseEvent): string {
  return JSON.stringify({ id, type: e.type, time: e.time, data: e });
}

/**
 * Fire-and-forget webhook fan-out: emit() never blocks a reconcile, deliveries retry in the
 * background, and flush() lets graceful shutdown wait for them.
 */
export class Notifier {
  private inFlight = new Set<Promise<void>>();
  private abort = new AbortController();

  constructor(private opts: NotifierOptions) {}

  emit(e: ReleaseEvent): void {
    for (const n of selectNotifications(this.opts.listNotifications(), e)) {
      const p = this.deliver(n, e).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    }
  }

  /** Waits for every delivery started so far (including their retries). */
  async flush(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  /** Stops waiting between retries (for a shutdown deadline); call flush() afterwards. */
  abandonRetries(): void {
    this.abort.abort();
  }

  private async deliver(n: Notification, e: ReleaseEvent): Promise<void> {
    const id = randomUUID();
    const name = `${n.metadata.namespace ?? e.namespace}/${n.metadata.name}`;
    const log = this.opts.logger?.child({ notification: name, event: e.type, delivery: id, plan: e.plan });
    let outcome: DeliveryOutcome;
    try {
      const ref = n.spec.webhook.secretRef;
      let secret: string | undefined;
      if (ref) {
        const key = ref.key ?? DEFAULT_SECRET_KEY;
        secret = await this.opts.readSecret(n.metadata.namespace ?? e.namespace, ref.name, key);
        // Sending unsigned when a signature was asked for would teach receivers to accept unsigned calls.
        if (!secret)
          throw new Error(`Secret ${ref.name} key ${key} (spec.webhook.secretRef of Notification ${name}) not found`);
      }
      outcome = await deliverWebhook({
        url: n.spec.webhook.url,
        body: webhookPayload(id, e),
        eventType: e.type,
        deliveryId: id,
        secret,
        headers: n.spec.webhook.headers,
        timeoutMs: (n.spec.webhook.timeoutSeconds ?? 10) * 1000,
        maxAttempts: n.spec.webhook.maxAttempts ?? 5,
        retryBaseMs: this.opts.retryBaseMs,
        retryMaxMs: this.opts.retryMaxMs,
        signal: this.abort.signal,
      });
    } catch (err) {
      outcome = { ok: false, attempts: 0, error: (err as Error).message };
    }
    metrics.notifications.inc({ result: outcome.ok ? 'delivered' : 'failed' });
    if (outcome.ok) log?.info({ attempts: outcome.attempts }, 'webhook delivered');
    else
      log?.warn({ attempts: outcome.attempts, status: outcome.status, err: outcome.error }, 'webhook delivery failed');
    try {
      this.opts.onDelivery?.(n, outcome.ok, outcome.error);
    } catch (err) {
      log?.error({ err }, 'onDelivery callback threw');
    }
  }
}
