import { setTimeout as sleep } from 'node:timers/promises';
import { defaultEgress, type Egress, EgressConnectionFailed, EgressError } from '../net/guardedFetch.js';
import { redactUrl } from '../net/redactUrl.js';
import { signWebhook } from './signWebhook.js';

export interface WebhookDelivery {
  url: string;
  /** Serialized once so every attempt (and its signature) covers the same bytes. */
  body: string;
  eventType: string;
  /** Same on every attempt so receivers can drop duplicates. */
  deliveryId: string;
  secret?: string;
  headers?: Record<string, string>;
  timeoutMs: number;
  maxAttempts: number;
  /** First backoff step; doubles per attempt with full jitter. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  signal?: AbortSignal;
  /** SSRF guard (allowed ranges, own listeners); the process default when absent. */
  egress?: Egress;
}

export interface DeliveryOutcome {
  ok: boolean;
  attempts: number;
  status?: number;
  error?: string;
}

/** Retry on network errors, timeouts, 5xx and 429; other 4xx mean the request itself is wrong. */
export const shouldRetry = (status: number | undefined) => status === undefined || status === 429 || status >= 500;

/** Retry-After as seconds or an HTTP date, in ms; undefined when absent or unparsable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export function backoffMs(attempt: number, baseMs: number, maxMs: number): number {
  const cap = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
  return Math.random() * cap;
}

export function webhookHeaders(d: WebhookDelivery, timestamp: string): Record<string, string> {
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
  const base = d.retryBaseMs ?? 1_000;
  const max = d.retryMaxMs ?? 60_000;
  const shown = webhookUrlForLogs(d.url);
  const egress = d.egress ?? defaultEgress();
  let last: DeliveryOutcome = { ok: false, attempts: 0 };
  for (let attempt = 1; attempt <= d.maxAttempts; attempt++) {
    let wait: number | undefined;
    const timestamp = Math.floor(Date.now() / 1000).toString();
    try {
      // A 3xx fails: a redirect would resend the signed body somewhere not configured.
      const res = await egress.fetch(d.url, {
        method: 'POST',
        headers: webhookHeaders(d, timestamp),
        body: d.body,
        timeoutMs: d.timeoutMs,
        signal: d.signal,
        maxBodyBytes: 0,
      });
      if (res.status >= 200 && res.status < 300) return { ok: true, attempts: attempt, status: res.status };
      last = { ok: false, attempts: attempt, status: res.status, error: `${shown} answered HTTP ${res.status}` };
      if (!shouldRetry(res.status)) return last;
      wait = retryAfterMs(res.header('retry-after') ?? null);
    } catch (err) {
      if (d.signal?.aborted) return { ok: false, attempts: attempt, error: `delivery to ${shown} aborted` };
      const e = err instanceof EgressError ? err : undefined;
      // Policy, URL and redirect refusals are configuration problems: retrying cannot help.
      if (e && (e.failure === 'blocked' || e.failure === 'invalid-url' || e.failure === 'redirect'))
        return { ok: false, attempts: attempt, error: `${shown} ${e.message}` };
      const reason =
        e?.failure === 'timeout'
          ? `timed out after ${d.timeoutMs}ms`
          : e instanceof EgressConnectionFailed && e.code
            ? e.code
            : (e?.message ?? 'request failed');
      last = { ok: false, attempts: attempt, error: `${shown} unreachable: ${reason}` };
    }
    if (attempt < d.maxAttempts) {
      try {
        await sleep(Math.min(wait ?? backoffMs(attempt, base, max), max), undefined, { signal: d.signal });
      } catch {
        return { ...last, error: `${last.error}; retries abandoned on shutdown` };
      }
    }
  }
  return { ...last, error: `${last.error} (gave up after ${last.attempts} attempts)` };
}
