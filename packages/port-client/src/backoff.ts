/**
 * When to retry a Port call and how long to wait: pure, so it is tested as a table.
 *
 * Port answers rate limiting with 429 and `x-ratelimit-period`, `-limit`, `-remaining` and `-reset`
 * headers (https://docs.port.io/api-reference/rate-limits; `-reset` is documented as the seconds
 * until the window resets, and by older pages as UTC epoch seconds, so values above 1e9 are read as
 * epoch) and recommends exponential backoff for 429 and server errors.
 */

export interface BackoffPolicy {
  /** Attempts per call, the first one included. */
  maxAttempts: number;
  /** First exponential wait (before jitter). */
  baseMs: number;
  /** Upper bound for one wait, also for a server-requested one, so a bogus header cannot stall a caller. */
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { maxAttempts: 6, baseMs: 200, maxMs: 30_000 };

/** One failed attempt: its index (0 = first), and the status and headers of the answer, if any. */
export interface Attempt {
  attempt: number;
  /** Undefined when there was no answer (connection refused or reset, DNS, timeout). */
  status?: number;
  headers?: Headers;
}

export type RetryDecision = { retry: true; delayMs: number } | { retry: false };

/** 429, 5xx and network errors are worth another attempt; any other answer is final. */
export const isRetryable = (status: number | undefined): boolean =>
  status === undefined || status === 429 || (status >= 500 && status <= 599);

/**
 * The wait the server asked for, in ms: `Retry-After` (seconds or an HTTP date) on any answer, else
 * `x-ratelimit-reset` on a 429 (on other answers it describes a window the caller has not exhausted).
 */
export function serverDelayMs(headers: Headers, status: number | undefined, now: number): number | undefined {
  const ra = headers.get('retry-after')?.trim();
  if (ra) {
    const s = Number(ra);
    if (Number.isFinite(s)) return Math.max(0, s * 1000);
    const d = Date.parse(ra);
    if (Number.isFinite(d)) return Math.max(0, d - now);
  }
  const reset = headers.get('x-ratelimit-reset')?.trim();
  if (status === 429 && reset) {
    const s = Number(reset);
    if (Number.isFinite(s)) return Math.max(0, s > 1e9 ? s * 1000 - now : s * 1000);
  }
  return undefined;
}

/** Exponential backoff with "equal jitter": between half and all of min(base·2^attempt, max). `random` in [0, 1). */
export function exponentialDelayMs(attempt: number, policy: Pick<BackoffPolicy, 'baseMs' | 'maxMs'>, random: number) {
  const cap = Math.min(policy.baseMs * 2 ** attempt, policy.maxMs);
  return cap / 2 + (cap / 2) * random;
}

/**
 * Whether to try again after `a`, and after how long: never for a final answer or once
 * `maxAttempts` are spent; else the server's requested wait, or exponential backoff with jitter,
 * bounded by `maxMs`.
 */
export function retryDecision(
  a: Attempt,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
  now = Date.now(),
  random = Math.random(),
): RetryDecision {
  if (!isRetryable(a.status) || a.attempt + 1 >= policy.maxAttempts) return { retry: false };
  const asked = a.headers ? serverDelayMs(a.headers, a.status, now) : undefined;
  return { retry: true, delayMs: Math.min(asked ?? exponentialDelayMs(a.attempt, policy, random), policy.maxMs) };
}

/** The wait after a 429 with these headers (kept for callers of the exporter's former helper). */
export function retryDelayMs(headers: Headers, attempt: number, now = Date.now()): number {
  return serverDelayMs(headers, 429, now) ?? exponentialDelayMs(attempt, { baseMs: 200, maxMs: 10_000 }, Math.random());
}
