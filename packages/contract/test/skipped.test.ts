import { describe, expect, it } from 'vitest';
import { noCandidatesMessage, reasonCounts, skippedNotListed, summariseSkipped } from '../src/skipped.js';

const s = (application: string, reason: string) => ({ application, reason, message: `${application}: ${reason}` });

describe('skipped applications in diff and plan answers', () => {
  const all = [
    s('a', 'UpToDate'),
    s('b', 'NoDigest'),
    s('c', 'UpToDate'),
    s('d', 'SourceNotHealthy'),
    s('e', 'NoDigest'),
  ];

  it('lists actionable reasons first, keeps order within a reason, and counts every one', () => {
    const r = summariseSkipped(all, 3);
    expect(r.skipped.map((x) => x.application)).toEqual(['d', 'b', 'e']);
    expect(r.skippedTotal).toBe(5);
    expect(r.skippedByReason).toEqual({ UpToDate: 2, NoDigest: 2, SourceNotHealthy: 1 });
    expect(skippedNotListed(r)).toBe(2);
    expect(summariseSkipped(all, 0).skipped).toEqual([]);
    expect(summariseSkipped(all, 100).skipped).toHaveLength(5);
  });

  it('counts an answer without counts (an older controller) from its list', () => {
    expect(skippedNotListed({ skipped: all })).toBe(0);
  });

  it('names ten skipped applications in the no-candidates error, then counts the rest by reason', () => {
    const many = Array.from({ length: 4000 }, (_, i) => s(`app-${i}`, 'UpToDate'));
    const msg = noCandidatesMessage('qa', 'stable', summariseSkipped([s('x', 'SourceNotHealthy'), ...many], 100));
    expect(msg.startsWith('no release candidates qa -> stable: x: x: SourceNotHealthy; app-0: app-0: UpToDate;')).toBe(
      true,
    );
    expect(msg.endsWith('; and 3991 more (1 SourceNotHealthy, 4000 UpToDate)')).toBe(true);
    expect(msg.split('; ')).toHaveLength(11);
    expect(noCandidatesMessage('a', 'b', { skipped: [] })).toBe('no release candidates a -> b: no applications');
    expect(reasonCounts({ UpToDate: 3, Custom: 1, NotSelected: 2 })).toBe('2 NotSelected, 3 UpToDate, 1 Custom');
  });
});
