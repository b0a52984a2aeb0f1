import { redactUrl } from '../net/redactUrl.js';
import { type DeliveryOutcome, type RetryingRequest, retryingRequest } from './retryingRequest.js';
import { signWebhook } from './signWebhook.js';

export type { DeliveryOutcome } from './retryingRequest.js';
export { backoffMs, retryAfterMs, shouldRetry } from './retryingRequest.js';

/** One kpromo event for one URL; timeouts, retries, shutdown signal and egress guard as {@link RetryingRequest}. */
export interface WebhookDelivery
  extends Pick<
    RetryingRequest<unknown>,
    'timeoutMs' | 'maxAttempts' | 'retryBaseMs' | 'retryMaxMs' | 'signal' | 'egress'
  > {
  url: string;
  /** Serialized once so every attempt (and its signature) covers the same bytes. */
  body: string;
  eventType: string;
  /** Same on every attempt so receivers can drop duplicates. */
  deliveryId: string;
  secret?: string;
  headers?: Record<string, string>;
}

export function webhookHeaders(
  d: Pick<WebhookDelivery, 'headers' | 'eventType' | 'deliveryId' | 'secret' | 'body'>,
  timestamp: string,
): Record<string, string> {
  return {
    ...d.headers,
    // Ours last: a user header must not be able to forge the signature or the delivery id.
    'content-type': 'application/json',
    'user-agent': 'kpromo-controller',
    'x-kpromo-event': d.eventType,
    'x-kpromo-delivery': d.deliveryId,
    'x-kpromo-timestamp': timestamp,
    ...(d.secret ? { 'x-kpromo-signature': signWebhook(d.secret, timestamp, d.body) } : {}),
  };
}

/**
 * Webhook URLs as logs and statuses show them: origin only, since the path of many incoming-webhook
 * URLs (Slack, Discord, Teams) is itself the credential, like query strings and userinfo.
 */
export const webhookUrlForLogs = (url: string) => redactUrl(url, { path: false });

/**
 * POSTs one event with bounded retries through the egress guard; never throws (the outcome says
 * what happened, in words safe for logs and statuses).
 */
export async function deliverWebhook(d: WebhookDelivery): Promise<DeliveryOutcome> {
  const { value: _, ...outcome } = await retryingRequest({
    url: d.url,
    shown: webhookUrlForLogs(d.url),
    body: d.body,
    headers: () => webhookHeaders(d, Math.floor(Date.now() / 1000).toString()),
    timeoutMs: d.timeoutMs,
    maxAttempts: d.maxAttempts,
    retryBaseMs: d.retryBaseMs,
    retryMaxMs: d.retryMaxMs,
    signal: d.signal,
    egress: d.egress,
  });
  return outcome;
}
