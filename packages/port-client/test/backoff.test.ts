import { describe, expect, it } from 'vitest';
import { type Attempt, type BackoffPolicy, retryDecision, retryDelayMs, serverDelayMs } from '../src/backoff.js';

const policy: BackoffPolicy = { maxAttempts: 4, baseMs: 100, maxMs: 5_000 };
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const h = (o: Record<string, string>) => new Headers(o);

describe('retryDecision', () => {
  const table: Array<[string, Attempt, number, ReturnType<typeof retryDecision>]> = [
    // [case, attempt, random, decision]
    ['200 is final', { attempt: 0, status: 200 }, 0, { retry: false }],
    ['404 is final', { attempt: 0, status: 404 }, 0, { retry: false }],
    ['422 is final', { attempt: 0, status: 422 }, 0, { retry: false }],
    ['401 is final here (the client refreshes the token itself)', { attempt: 0, status: 401 }, 0, { retry: false }],
    ['500, first attempt, no jitter: half of base', { attempt: 0, status: 500 }, 0, { retry: true, delayMs: 50 }],
    ['503, first attempt, full jitter: base', { attempt: 0, status: 503 }, 0.999_999, { retry: true, delayMs: 100 }],
    ['network error doubles per attempt', { attempt: 2 }, 0, { retry: true, delayMs: 200 }],
    ['502 on the last allowed attempt: give up', { attempt: 3, status: 502 }, 0, { retry: false }],
    ['network error on the last attempt: give up', { attempt: 3 }, 0, { retry: false }],
    [
      '429 Retry-After seconds',
      { attempt: 0, status: 429, headers: h({ 'retry-after': '2' }) },
      0.5,
      { retry: true, delayMs: 2_000 },
    ],
    [
      '429 Retry-After HTTP date',
      { attempt: 0, status: 429, headers: h({ 'retry-after': new Date(NOW + 3_000).toUTCString() }) },
      0.5,
      { retry: true, delayMs: 3_000 },
    ],
    [
      "429 with Port's x-ratelimit-reset in seconds",
      { attempt: 1, status: 429, headers: h({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '4' }) },
      0.5,
      { retry: true, delayMs: 4_000 },
    ],
    [
      '429 with x-ratelimit-reset as epoch seconds',
      { attempt: 0, status: 429, headers: h({ 'x-ratelimit-reset': String(NOW / 1000 + 1) }) },
      0.5,
      { retry: true, delayMs: 1_000 },
    ],
    [
      'Retry-After wins over x-ratelimit-reset',
      { attempt: 0, status: 429, headers: h({ 'retry-after': '1', 'x-ratelimit-reset': '4' }) },
      0.5,
      { retry: true, delayMs: 1_000 },
    ],
    [
      'a server wait is bounded by maxMs',
      { attempt: 0, status: 429, headers: h({ 'retry-after': '3600' }) },
      0.5,
      { retry: true, delayMs: 5_000 },
    ],
    [
      'x-ratelimit-reset on a 500 is not a request to wait: backoff',
      { attempt: 0, status: 500, headers: h({ 'x-ratelimit-reset': '60' }) },
      0,
      { retry: true, delayMs: 50 },
    ],
    [
      '429 without usable headers: backoff',
      { attempt: 1, status: 429, headers: h({ 'retry-after': 'soon' }) },
      0,
      { retry: true, delayMs: 100 },
    ],
  ];
  it.each(table)('%s', (_name, attempt, random, want) => {
    const got = retryDecision(attempt, policy, NOW, random);
    if (want.retry && got.retry) expect(got.delayMs).toBeCloseTo(want.delayMs, 0);
    else expect(got).toEqual(want);
  });

  it('caps the exponential wait at maxMs', () => {
    expect(retryDecision({ attempt: 20, status: 500 }, { ...policy, maxAttempts: 50 }, NOW, 0.999_999)).toEqual({
      retry: true,
      delayMs: expect.closeTo(5_000, 0),
    });
  });
});

describe('serverDelayMs', () => {
  it('reads nothing from an answer without wait headers', () => {
    expect(serverDelayMs(h({ 'x-ratelimit-remaining': '10' }), 429, NOW)).toBeUndefined();
  });
  it('never answers a negative wait (a reset in the past)', () => {
    expect(serverDelayMs(h({ 'x-ratelimit-reset': String(NOW / 1000 - 5) }), 429, NOW)).toBe(0);
  });
});

describe('retryDelayMs (the exporter helper)', () => {
  it('honours retry-after and x-ratelimit-reset, else backs off exponentially', () => {
    expect(retryDelayMs(h({ 'retry-after': '2' }), 0)).toBe(2000);
    expect(retryDelayMs(h({ 'x-ratelimit-reset': '3' }), 0)).toBe(3000);
    expect(retryDelayMs(h({ 'x-ratelimit-reset': '2000000005' }), 0, 2_000_000_000_000)).toBe(5000);
    expect(retryDelayMs(h({}), 3)).toBeLessThanOrEqual(1600);
  });
});
