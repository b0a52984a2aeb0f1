import { describe, expect, it } from 'vitest';
import { approvedByText, durationText, planHold, shortDigest } from '../src/index.js';

const NOW = Date.parse('2026-12-07T10:00:00Z');

describe('planText', () => {
  it('holds a plan by an unlifted freeze window first, then missing approvals, then soak time', () => {
    const later = '2026-12-07T11:00:00Z';
    expect(planHold({ approved: false, frozen: { window: 'xmas' }, eligibleAt: later }, NOW)).toBe('frozen');
    expect(planHold({ approved: false, frozen: { window: 'xmas', overriddenBy: 'alice' } }, NOW)).toBe(
      'awaiting-approval',
    );
    expect(planHold({ approved: true, eligibleAt: later }, NOW)).toBe('soaking');
    expect(planHold({ approved: true, eligibleAt: '2026-12-07T09:00:00Z' }, NOW)).toBeUndefined();
  });

  it('shortens sha256 digests to 12 hex digits and durations to their largest unit', () => {
    expect(shortDigest(`sha256:${'0123456789ab'.repeat(5)}cdef`)).toBe('sha256:0123456789ab');
    expect(shortDigest('v1.2.0')).toBe('v1.2.0');
    expect(shortDigest(undefined)).toBeUndefined();
    expect([59, 60, 3599, 3600, 86_399, 86_400].map(durationText)).toEqual(['59s', '1m', '59m', '1h', '23h', '1d']);
  });

  it.each([
    [{ approvedBy: [] }, undefined],
    [{ approvedBy: ['alice', 'bob'] }, 'approved by alice, bob'],
    [{ approvedBy: ['alice', 'bob'], approvedByPersons: ['alice', 'bob'] }, 'approved by alice, bob'],
    [
      { approvedBy: ['alice', 'alice-admin', 'bob'], approvedByPersons: ['alice@corp', 'bob'] },
      'approved by alice, alice-admin, bob (2 persons: alice@corp, bob)',
    ],
    [
      { approvedBy: ['alice', 'mallory'], approvedByPersons: ['alice'] },
      'approved by alice, mallory (1 person: alice)',
    ],
    [
      { approvedBy: ['alice', 'carol'], overriddenBy: 'carol', overrideReason: 'payments down, hotfix v1.1.1' },
      'approved by alice, carol; carol overrode freezes and line stops: payments down, hotfix v1.1.1',
    ],
  ])('says who approved %j: %s', (entry, text) => {
    expect(approvedByText(entry)).toBe(text);
  });
});
