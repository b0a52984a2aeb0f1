import { afterEach, describe, expect, it, vi } from 'vitest';
import { SampledLog } from './sampledLog.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('SampledLog', () => {
  it('writes the first lines of an interval, then one summary of the rest', () => {
    let now = 0;
    const lines: string[] = [];
    const s = new SampledLog({ warn: (_o: object, m: string) => void lines.push(m) } as never, {
      lines: 3,
      intervalMs: 10_000,
      what: 'requests refused',
      now: () => now,
    });
    for (let i = 0; i < 1000; i++) s.warn({ i }, `refused ${i}`);
    expect(lines).toEqual(['refused 0', 'refused 1', 'refused 2']);
    now = 10_000;
    s.warn({}, 'refused again'); // a new interval: the summary of the last one first
    expect(lines.slice(3)).toEqual(['997 more requests refused in the last 10s', 'refused again']);
    s.close();
    expect(lines).toHaveLength(5); // nothing suppressed since: no summary
    expect(s.totalSuppressed).toBe(997);
  });

  it('the summary follows the interval even when the flood stopped', () => {
    // The interval's clock and its timer are fake, moved by hand: on the real clock a busy machine
    // could pause the loop below for the whole 30 ms interval and start a new one halfway.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const lines: string[] = [];
    const s = new SampledLog({ warn: (_o: object, m: string) => void lines.push(m) } as never, {
      lines: 1,
      intervalMs: 30,
      what: 'requests refused',
    });
    for (let i = 0; i < 5; i++) s.warn({}, 'refused');
    vi.advanceTimersByTime(29);
    expect(lines).toEqual(['refused']);
    vi.advanceTimersByTime(1);
    expect(lines).toEqual(['refused', '4 more requests refused in the last 1s']);
  });
});
