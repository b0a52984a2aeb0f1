import { describe, expect, it } from 'vitest';
import { filterHistory, InvalidContinue, mergeHistory, pageHistory } from '../../src/history/query.js';
import { entry } from './fixtures.js';

const es = [1, 2, 3, 4, 5].map((d) =>
  entry(`k${d}`, { finishedAt: `2026-12-0${d}T00:00:00Z`, environment: d % 2 ? 'prod' : 'stable' }),
);

describe('history queries', () => {
  it('pages newest first with a position token that later entries do not shift', () => {
    const p1 = pageHistory(es, 2);
    expect(p1.items.map((e) => e.key)).toEqual(['k5', 'k4']);
    expect(p1.total).toBe(5);
    const newer = entry('k6', { finishedAt: '2026-12-06T00:00:00Z' });
    const p2 = pageHistory([...es, newer], 2, p1.continue);
    expect(p2.items.map((e) => e.key)).toEqual(['k3', 'k2']);
    const p3 = pageHistory(es, 2, p2.continue);
    expect(p3.items.map((e) => e.key)).toEqual(['k1']);
    expect(p3.continue).toBeUndefined();
    expect(() => pageHistory(es, 2, 'garbage')).toThrow(InvalidContinue);
  });

  it('within one second (status times have second resolution): later start first, a rollback before what it reverts', () => {
    const t = '2026-12-07T10:00:05Z';
    const ghost = entry('a-ghost', { finishedAt: t, startedAt: '2026-12-07T10:00:04Z', result: 'Failed' });
    const promoted = entry('b-web', { finishedAt: t, startedAt: '2026-12-07T10:00:04Z', result: 'RolledBack' });
    const back = entry('c-back', { finishedAt: t, startedAt: '2026-12-07T10:00:05Z', action: 'rollback' });
    const sameStart = entry('0-back', { finishedAt: t, startedAt: '2026-12-07T10:00:04Z', action: 'rollback' });
    expect(pageHistory([ghost, promoted, back], 10).items.map((e) => e.key)).toEqual(['c-back', 'a-ghost', 'b-web']);
    expect(pageHistory([ghost, sameStart], 10).items.map((e) => e.key)).toEqual(['0-back', 'a-ghost']);
    // The position token still pages through the tie without repeating or skipping.
    const p1 = pageHistory([ghost, promoted, back], 1);
    const p2 = pageHistory([ghost, promoted, back], 1, p1.continue);
    const p3 = pageHistory([ghost, promoted, back], 1, p2.continue);
    expect([p1, p2, p3].flatMap((p) => p.items.map((e) => e.key))).toEqual(['c-back', 'a-ghost', 'b-web']);
    expect(p3.continue).toBeUndefined();
  });

  it('filters by environment and time (since inclusive, until exclusive)', () => {
    const f = filterHistory(es, { environment: 'prod', since: '2026-12-03T00:00:00Z', until: '2026-12-05T00:00:00Z' });
    expect(f.map((e) => e.key)).toEqual(['k3']);
  });

  it('merges the log with live plans, one entry per key', () => {
    const live = [entry('k1', { finishedAt: '2026-12-01T00:00:00Z', result: 'RolledBack', source: 'plan' })];
    const m = mergeHistory(es, live);
    expect(m).toHaveLength(5);
    expect(m.find((e) => e.key === 'k1')).toMatchObject({ result: 'RolledBack', source: 'log' });
  });
});
