import { describe, expect, it } from 'vitest';
import { checkInput, DoraQuery, HistoryQuery, parseTimeExpression } from '../src/index.js';

// A Thursday.
const now = new Date('2026-12-03T15:30:00Z');
const at = (s: string) => parseTimeExpression(s, now)?.toISOString();

describe('time expressions (history since/until)', () => {
  it('reads durations ago, days and weekdays (UTC), dates and date-times', () => {
    expect(at('7d')).toBe('2026-11-26T15:30:00.000Z');
    expect(at('12h')).toBe('2026-12-03T03:30:00.000Z');
    expect(at('today')).toBe('2026-12-03T00:00:00.000Z');
    expect(at('yesterday')).toBe('2026-12-02T00:00:00.000Z');
    expect(at('monday')).toBe('2026-11-30T00:00:00.000Z');
    expect(at('Thursday')).toBe('2026-12-03T00:00:00.000Z');
    expect(at('friday')).toBe('2026-11-27T00:00:00.000Z');
    expect(at('2026-12-01')).toBe('2026-12-01T00:00:00.000Z');
    expect(at('2026-12-01T10:00:00+02:00')).toBe('2026-12-01T08:00:00.000Z');
  });

  it('refuses anything else, naming the forms', () => {
    for (const bad of ['last week', '2026-13-01', '7', 'mon', '2026-12-01 10:00']) expect(at(bad)).toBeUndefined();
    const r = checkInput(HistoryQuery, { since: 'last week' }, 'query');
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(/^invalid query: since: must be a date/);
  });

  it('parses the DORA window as days', () => {
    expect(checkInput(DoraQuery, { window: '7d' }, 'query')).toEqual({ ok: true, value: { window: 7 } });
    expect(checkInput(DoraQuery, { window: '400d' }, 'query').ok).toBe(false);
  });
});
