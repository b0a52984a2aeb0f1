import { randomUUID } from 'node:crypto';
import type { Notification } from '@kpromo/api';
import type { NotificationProvider, ReleaseEvent } from '../extension/notificationProvider.js';
import type { Egress } from '../net/guardedFetch.js';
import type { Logger } from '../observability/logger.js';
import { metrics } from '../observability/metrics.js';
import type { ImageCommitSource } from './imageCommits.js';
import { countOutcome, type NotificationStatusSink } from './notificationStatus.js';
import { resolveTarget } from './providers/index.js';
import type { DeliveryContext } from './providers/types.js';
import { type DeliveryOutcome, retryingRequest } from './retryingRequest.js';
import { NotificationSecrets, type SecretReaders } from './secretRefs.js';
import { NotificationThreads } from './threads.js';

export { DEFAULT_SECRET_KEY, plainHeadersProblem, webhookPayload } from './providers/webhook.js';

export interface NotifierOptions extends SecretReaders {
  listNotifications(): Notification[];
  /** SSRF guard for every target URL (config egress.allowedCidrs, own listeners); process default when absent. */
  egress?: Egress;
  logger?: Logger;
  onDelivery?: (n: Notification, ok: boolean, error?: string, outcome?: DeliveryOutcome) => void;
  /** Records outcomes and thread anchors in Notification statuses; nothing is recorded when absent. */
  status?: NotificationStatusSink;
  /** Image labels for github commit statuses; github targets skip every event when absent. */
  commits?: ImageCommitSource;
  /** Backoff tuning (tests use small values). */
  retryBaseMs?: number;
  retryMaxMs?: number;
}

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

/**
 * Fire-and-forget fan-out to the Notification resources (each with one target: webhook, slack,
 * msteams, discord or github): emit() never blocks a reconcile, deliveries retry in the background,
 * the events of one plan reach one Notification in order (threads need the first message's id), and
 * flush() lets graceful shutdown wait for them.
 */
export class Notifier implements NotificationProvider {
  /** The built-in notification provider: the Notification resources. */
  readonly name = 'webhook';
  private inFlight = new Set<Promise<void>>();
  /** Last delivery per Notification and plan: the next one waits for it. */
  private chains = new Map<string, Promise<void>>();
  private abort = new AbortController();
  private readonly threads: NotificationThreads;

  constructor(private opts: NotifierOptions) {
    this.threads = new NotificationThreads(opts.status);
  }

  notify(e: ReleaseEvent): void {
    this.emit(e);
  }

  emit(e: ReleaseEvent): void {
    for (const n of selectNotifications(this.opts.listNotifications(), e)) {
      const key = `${n.metadata.namespace ?? e.namespace}/${n.metadata.name}/${e.plan}`;
      const p = (this.chains.get(key) ?? Promise.resolve()).then(() => this.deliver(n, e));
      this.chains.set(key, p);
      const tracked = p.finally(() => {
        this.inFlight.delete(tracked);
        if (this.chains.get(key) === p) this.chains.delete(key);
      });
      this.inFlight.add(tracked);
    }
  }

  /** Waits for every delivery started so far (including their retries) and the status writes they made. */
  async flush(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
    await this.opts.status?.flush?.();
  }

  /** Stops waiting between retries (for a shutdown deadline); call flush() afterwards. */
  abandonRetries(): void {
    this.abort.abort();
  }

  private context(n: Notification, e: ReleaseEvent, ns: string, name: string, spec: unknown): DeliveryContext {
    const tuning = spec as { timeoutSeconds?: number; maxAttempts?: number };
    const secrets = new NotificationSecrets(this.opts, ns, name);
    return {
      notification: n,
      name,
      event: e,
      deliveryId: randomUUID(),
      secrets,
      request: (r) =>
        retryingRequest({
          ...r,
          // Every Secret this delivery read, checked against each request right before it is sent.
          refusal: (url) => secrets.refusalFor(url) ?? r.refusal?.(url),
          timeoutMs: (tuning.timeoutSeconds ?? 10) * 1000,
          maxAttempts: tuning.maxAttempts ?? 5,
          retryBaseMs: this.opts.retryBaseMs,
          retryMaxMs: this.opts.retryMaxMs,
          signal: this.abort.signal,
          egress: this.opts.egress,
        }),
      threads: this.threads.for(n),
      commits: this.opts.commits,
      log: this.opts.logger,
    };
  }

  /** One event to one Notification; never throws. */
  private async deliver(n: Notification, e: ReleaseEvent): Promise<void> {
    const ns = n.metadata.namespace ?? e.namespace;
    const name = `${ns}/${n.metadata.name}`;
    const resolved = resolveTarget(n, name);
    const kind = 'kind' in resolved ? resolved.kind : 'notification';
    let ctx: DeliveryContext | undefined;
    let outcome: DeliveryOutcome;
    try {
      if ('problem' in resolved) throw new Error(resolved.problem);
      ctx = this.context(n, e, ns, name, resolved.spec);
      outcome = await resolved.target.deliver(resolved.spec, ctx);
    } catch (err) {
      outcome = { ok: false, attempts: 0, error: (err as Error).message };
    }
    const log = this.opts.logger?.child({
      notification: name,
      event: e.type,
      delivery: ctx?.deliveryId,
      plan: e.plan,
      target: kind,
    });
    const result = outcome.skipped ? 'skipped' : outcome.ok ? 'delivered' : 'failed';
    metrics.notifications.inc({ result });
    if (result === 'skipped') log?.debug({ reason: outcome.skipped }, `${kind}: nothing to send`);
    else if (outcome.ok) log?.info({ attempts: outcome.attempts }, `${kind} delivered`);
    else
      log?.warn({ attempts: outcome.attempts, status: outcome.status, err: outcome.error }, `${kind} delivery failed`);
    this.opts.status?.update(n, (s) => countOutcome(s, outcome, new Date().toISOString()));
    try {
      this.opts.onDelivery?.(n, outcome.ok, outcome.error, outcome);
    } catch (err) {
      log?.error({ err }, 'onDelivery callback threw');
    }
  }
}
