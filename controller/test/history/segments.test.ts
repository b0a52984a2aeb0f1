import type { HistoryEntry } from '@kpromo/contract';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETENTION,
  dataKey,
  decodeSegment,
  ENVIRONMENT_ANNOTATION,
  monthExpired,
  segmentName,
  upsertSegment,
} from '../../src/history/segments.js';
import { entry } from './fixtures.js';

const now = new Date('2026-12-15T00:00:00Z');
const cm = (data: Record<string, string>, env = 'prod', namespace = 'shop') => ({
  metadata: { name: 'kpromo-history-prod-202612', namespace, annotations: { [ENVIRONMENT_ANNOTATION]: env } },
  data,
});
const encode = (es: HistoryEntry[]) => Object.fromEntries(es.map((e) => [dataKey(e.key), JSON.stringify(e)]));

describe('history segments (ConfigMaps)', () => {
  it('are named per environment and month, hashing environments too long for a name', () => {
    expect(segmentName('prod', '2026-12')).toBe('kpromo-history-prod-202612');
    const long = segmentName('e'.repeat(240), '2026-12');
    expect(long).toMatch(/^kpromo-history-[0-9a-f]{16}-202612$/);
  });

  it('upserts idempotently: recording the same entry again changes nothing', () => {
    const e = entry('k1', { finishedAt: '2026-12-01T00:00:00Z' });
    const first = upsertSegment([], [e], DEFAULT_RETENTION, now);
    expect(first).toMatchObject({ added: ['k1'], dropped: 0, changed: true });
    const again = upsertSegment(decodeSegment(cm(first.data)), [e], DEFAULT_RETENTION, now);
    expect(again).toMatchObject({ added: [], changed: false });
    const rolledBack = upsertSegment(
      decodeSegment(cm(first.data)),
      [{ ...e, result: 'RolledBack' }],
      DEFAULT_RETENTION,
      now,
    );
    expect(rolledBack).toMatchObject({ added: [], changed: true });
    expect(JSON.parse(Object.values(rolledBack.data)[0]).result).toBe('RolledBack');
  });

  it('applies retention: age, entries per month, then bytes, oldest first', () => {
    const es = [1, 2, 3, 4].map((d) => entry(`k${d}`, { finishedAt: `2026-12-0${d}T00:00:00Z` }));
    const byCount = upsertSegment([], es, { ...DEFAULT_RETENTION, maxEntriesPerMonth: 2 }, now);
    expect(Object.keys(byCount.data).sort()).toEqual([dataKey('k3'), dataKey('k4')].sort());
    expect(byCount.dropped).toBe(2);
    const byAge = upsertSegment([], es, { ...DEFAULT_RETENTION, maxAgeDays: 12 }, now);
    expect(Object.keys(byAge.data)).toEqual([dataKey('k3'), dataKey('k4')]);
    const one = Buffer.byteLength(JSON.stringify(es[0])) + dataKey('k1').length;
    const byBytes = upsertSegment([], es, { ...DEFAULT_RETENTION, maxBytes: one * 3 }, now);
    expect(Object.keys(byBytes.data)).toHaveLength(3);
    expect(byBytes.data[dataKey('k1')]).toBeUndefined();
  });

  it('reads back only well-formed entries of its own namespace and environment', () => {
    const good = entry('good', { finishedAt: '2026-12-01T00:00:00Z' });
    const withPersons = entry('persons', { finishedAt: '2026-12-01T00:00:00Z', approvedByPersons: ['alice@corp'] });
    const otherEnv = entry('other', { finishedAt: '2026-12-01T00:00:00Z', environment: 'dev' });
    const overridden = entry('override', {
      finishedAt: '2026-12-01T00:00:00Z',
      overriddenBy: 'carol',
      overrideReason: 'payments down, hotfix v1.1.1',
    });
    const data = {
      ...encode([good, withPersons, otherEnv, overridden]),
      [dataKey('bad-json')]: '{not json',
      [dataKey('bad-result')]: JSON.stringify({
        ...entry('bad-result', { finishedAt: '2026-12-01T00:00:00Z' }),
        result: 'Great',
      }),
      [dataKey('bad-persons')]: JSON.stringify({
        ...entry('bad-persons', { finishedAt: '2026-12-01T00:00:00Z' }),
        approvedByPersons: 'alice@corp',
      }),
      [dataKey('bad-reason')]: JSON.stringify({
        ...entry('bad-reason', { finishedAt: '2026-12-01T00:00:00Z', overriddenBy: 'carol' }),
        overrideReason: 'x'.repeat(1025),
      }),
      // a valid entry under a key that is not its own (moved or forged)
      'e-0000': JSON.stringify(entry('moved', { finishedAt: '2026-12-01T00:00:00Z' })),
    };
    expect(decodeSegment(cm(data)).map((e) => e.key)).toEqual(['good', 'persons', 'override']);
    expect(decodeSegment(cm(data, 'prod', 'elsewhere'))).toEqual([]);
  });

  it('expires a month once all of it is older than the retention', () => {
    expect(monthExpired('2026-01', { ...DEFAULT_RETENTION, maxAgeDays: 300 }, now)).toBe(true);
    expect(monthExpired('2026-03', { ...DEFAULT_RETENTION, maxAgeDays: 300 }, now)).toBe(false);
  });
});
