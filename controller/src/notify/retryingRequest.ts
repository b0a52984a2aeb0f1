import { setTimeout as sleep } from 'node:timers/promises';
import {
  defaultEgress,
  type Egress,
  EgressConnectionFailed,
  EgressError,
  type GuardedRequest,
  type GuardedResponse,
} from '../net/guardedFetch.js';

/** What one delivery came to, in words safe for logs and statuses. */
export interface DeliveryOutcome {
  ok: boolean;
  attempts: number;
  status?: number;
  error?: string;
  /** Nothing to send for this event (e.g. an image without source labels): ok (nothing failed), but not delivered. */
  skipped?: string;
}

/** How an answer is read: done, or an error that may be retried (after the server's wait, if it named one). */
export type Verdict<T> =
  | { ok: true; value: T }
  | { ok: false; error: string; retry: boolean; retryAfterMs?: number; status?: number };

export interface RetryingRequest<T> {
  url: string;
  /** The URL as errors show it (credentials and credential-bearing paths removed). */
  shown: string;
  method?: GuardedRequest['method'];
  /** Same bytes on every attempt. */
  body?: string;
  /** Per attempt, so time-bound signatures are fresh. */
  headers(): Record<string, string>;
  /** Reads an answer (2xx or not); the default: 2xx ok, 429 and 5xx retried, Retry-After honoured. */
  judge?(res: GuardedResponse): Verdict<T>;
  /** Response bytes kept for judge (0 when only the status matters). */
  maxBodyBytes?: number;
  timeoutMs: number;
  maxAttempts: number;
  /** First backoff step; doubles per attempt with full jitter. */
  retryBaseMs?: number;
  /** Cap of every wait, Retry-After included. */
  retryMaxMs?: number;
  signal?: AbortSignal;
  /** SSRF guard (allowed ranges, own listeners); the process default when absent. */
  egress?: Egress;
  /**
   * Why `url` may not get this request (the credentials it carries may not go there:
   * credentials/credentialPolicy.ts), or undefined; asked right before every attempt.
   */
  refusal?(url: string): string | undefined;
}

/** Retry on network errors, timeouts, 5xx and 429; other 4xx mean the request itself is wrong. */
export const shouldRetry = (status: number | undefined) => status === undefined || status === 429 || status >= 500;

/** Retry-After as seconds or an HTTP date, in ms; undefined when absent or unparsable. */
export function retryAfterMs(value: string | null | undefined, now = Date.now()): number | undefined {
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

/** 2xx is done; anything else is `<shown> answered HTTP <status>`, retried per {@link shouldRetry}. */
export function statusVerdict(res: GuardedResponse, shown: string, detail?: string): Verdict<GuardedResponse> {
  if (res.status >= 200 && res.status < 300) return { ok: true, value: res };
  return {
    ok: false,
    status: res.status,
    error: `${shown} answered HTTP ${res.status}${detail ? ` (${detail})` : ''}`,
    retry: shouldRetry(res.status),
    retryAfterMs: retryAfterMs(res.header('retry-after')),
  };
}

/**
 * Provider error text as statuses may show it. Answers are not ours to echo (a receiver could put
 * anything there): only printable ASCII is kept, whitespace collapsed, at most 160 characters.
 */
export function safeProviderText(text: unknown): string | undefined {
  if (typeof text !== 'string' && typeof text !== 'number') return undefined;
  const clean = String(text)
    .replace(/[^\x20-\x7e]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (!clean) return undefined;
  return clean.length > 160 ? `${clean.slice(0, 159)}…` : clean;
}

/** A JSON answer body, or undefined when it is not JSON (or was cut at maxBodyBytes). */
export function jsonBody<T>(res: GuardedResponse): T | undefined {
  if (res.truncated || !res.body.length) return undefined;
  try {
    return JSON.parse(res.body.toString('utf8')) as T;
  } catch {
    return undefined;
  }
}

/**
 * One HTTP request through the egress guard with bounded retries; never throws: the outcome says
 * what happened (and carries the judged value when it succeeded).
 */
export async function retryingRequest<T = GuardedResponse>(
  r: RetryingRequest<T>,
): Promise<DeliveryOutcome & { value?: T }> {
  const base = r.retryBaseMs ?? 1_000;
  const max = r.retryMaxMs ?? 60_000;
  const egress = r.egress ?? defaultEgress();
  const judge = r.judge ?? ((res: GuardedResponse) => statusVerdict(res, r.shown) as Verdict<T>);
  let last: DeliveryOutcome = { ok: false, attempts: 0 };
  for (let attempt = 1; attempt <= r.maxAttempts; attempt++) {
    let wait: number | undefined;
    // A refusal is the Secret owner's word: nothing is sent, and retrying cannot change it.
    const refused = r.refusal?.(r.url);
    if (refused) return { ok: false, attempts: attempt - 1, error: refused };
    try {
      // A 3xx fails: a redirect would resend the body (and credentials) somewhere not configured.
      const res = await egress.fetch(r.url, {
        method: r.method ?? 'POST',
        headers: r.headers(),
        body: r.body,
        timeoutMs: r.timeoutMs,
        signal: r.signal,
        maxBodyBytes: r.maxBodyBytes ?? 0,
      });
      const v = judge(res);
      if (v.ok) return { ok: true, attempts: attempt, status: res.status, value: v.value };
      last = { ok: false, attempts: attempt, status: v.status ?? res.status, error: v.error };
      if (!v.retry) return last;
      wait = v.retryAfterMs;
    } catch (err) {
      if (r.signal?.aborted) return { ok: false, attempts: attempt, error: `delivery to ${r.shown} aborted` };
      const e = err instanceof EgressError ? err : undefined;
      // Policy, URL and redirect refusals are configuration problems: retrying cannot help.
      if (e && (e.failure === 'blocked' || e.failure === 'invalid-url' || e.failure === 'redirect'))
        return { ok: false, attempts: attempt, error: `${r.shown} ${e.message}` };
      const reason =
        e?.failure === 'timeout'
          ? `timed out after ${r.timeoutMs}ms`
          : e instanceof EgressConnectionFailed && e.code
            ? e.code
            : (e?.message ?? 'request failed');
      last = { ok: false, attempts: attempt, error: `${r.shown} unreachable: ${reason}` };
    }
    if (attempt < r.maxAttempts) {
      try {
        await sleep(Math.min(wait ?? backoffMs(attempt, base, max), max), undefined, { signal: r.signal });
      } catch {
        return { ...last, error: `${last.error}; retries abandoned on shutdown` };
      }
    }
  }
  return { ...last, error: `${last.error} (gave up after ${last.attempts} attempts)` };
}
