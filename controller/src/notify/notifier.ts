import { randomUUID } from 'node:crypto';
import type { Notification, NotificationEvent } from '@kpromo/api';
import type { Egress } from '../net/guardedFetch.js';
import type { Logger } from '../observability/logger.js';
import { metrics } from '../observability/metrics.js';
import { type DeliveryOutcome, deliverWebhook } from './deliverWebhook.js';
import type { NotificationProvider } from './provider.js';

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
  /** Every key of a Secret (spec.webhook.headersSecretRef); undefined when it does not exist. */
  readSecretData?(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  /** SSRF guard for webhook URLs (config egress.allowedCidrs, own listeners); process default when absent. */
  egress?: Egress;
  logger?: Logger;
  onDelivery?: (n: Notification, ok: boolean, error?: string) => void;
  /** Backoff tuning (tests use small values). */
  retryBaseMs?: number;
  retryMaxMs?: number;
}

/** Key read from spec.webhook.secretRef when it names none. */
export const DEFAULT_SECRET_KEY = 'secret';

/** Header names plain spec.webhook.headers may not carry: credentials belong in headersSecretRef. */
const SENSITIVE_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization', 'x-api-key']);
const SENSITIVE_PATTERN = /token|secret|key|auth/i;
/** Set by the HTTP client or meaningful to the connection, not to the receiver: never from a CR. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Why a header (name from `where`) may not be sent, or undefined. Never quotes the value. */
function headerProblem(name: string, value: string, where: string): string | undefined {
  if (!HEADER_NAME.test(name)) return `${where} has an invalid header name ${JSON.stringify(name)}`;
  if (RESERVED_HEADERS.has(name.toLowerCase()) || name.toLowerCase().startsWith('x-kpromo-'))
    return `${where} may not set header ${name}`;
  if (!HEADER_VALUE.test(value)) return `${where}: the value of header ${name} contains control characters`;
  return undefined;
}

/**
 * Plain spec.webhook.headers are readable by everyone who can read the Notification: refuse
 * credentials there (Authorization, Cookie, X-Api-Key, names with token/secret/key/auth).
 */
export function plainHeadersProblem(headers: Record<string, string> | undefined): string | undefined {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (SENSITIVE_HEADERS.has(name.toLowerCase()) || SENSITIVE_PATTERN.test(name))
      return `spec.webhook.headers.${name} looks like a credential and is refused in plain spec; put it in a Secret referenced by spec.webhook.headersSecretRef (its keys are header names)`;
    const p = headerProblem(name, value, 'spec.webhook.headers');
    if (p) return p;
  }
  return undefined;
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

/** The JSON body receivers get; `id` equals the x-kpromo-delivery header. */
export function webhookPayload(id: string, e: ReleaseEvent): string {
  return JSON.stringify({ id, type: e.type, time: e.time, data: e });
}

/**
 * Fire-and-forget webhook fan-out: emit() never blocks a reconcile, deliveries retry in the
 * background, and flush() lets graceful shutdown wait for them.
 */
export class Notifier implements NotificationProvider {
  /** The built-in notification provider: Notification resources with spec.webhook. */
  readonly name = 'webhook';
  private inFlight = new Set<Promise<void>>();
  private abort = new AbortController();

  constructor(private opts: NotifierOptions) {}

  notify(e: ReleaseEvent): void {
    this.emit(e);
  }

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

  /** Plain (non-sensitive) headers plus the ones from spec.webhook.headersSecretRef; throws a status-safe Error. */
  private async headers(n: Notification, name: string, ns: string): Promise<Record<string, string>> {
    const plain = n.spec.webhook.headers;
    const problem = plainHeadersProblem(plain);
    if (problem) throw new Error(`Notification ${name}: ${problem}`);
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(plain ?? {})) out[k.toLowerCase()] = v;
    const ref = n.spec.webhook.headersSecretRef;
    if (ref) {
      const data = this.opts.readSecretData ? await this.opts.readSecretData(ns, ref.name) : undefined;
      if (!data)
        throw new Error(`Secret ${ref.name} (spec.webhook.headersSecretRef of Notification ${name}) not found`);
      for (const [k, v] of Object.entries(data)) {
        const p = headerProblem(k, v, `Secret ${ref.name} (spec.webhook.headersSecretRef of Notification ${name})`);
        if (p) throw new Error(p);
        out[k.toLowerCase()] = v;
      }
    }
    return out;
  }

  private async deliver(n: Notification, e: ReleaseEvent): Promise<void> {
    const id = randomUUID();
    const name = `${n.metadata.namespace ?? e.namespace}/${n.metadata.name}`;
    const log = this.opts.logger?.child({ notification: name, event: e.type, delivery: id, plan: e.plan });
    let outcome: DeliveryOutcome;
    try {
      const headers = await this.headers(n, name, n.metadata.namespace ?? e.namespace);
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
        headers,
        timeoutMs: (n.spec.webhook.timeoutSeconds ?? 10) * 1000,
        maxAttempts: n.spec.webhook.maxAttempts ?? 5,
        retryBaseMs: this.opts.retryBaseMs,
        retryMaxMs: this.opts.retryMaxMs,
        signal: this.abort.signal,
        egress: this.opts.egress,
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
