import { describe, expect, it } from 'vitest';
import { canAcquire } from '../src/leader/leaderElection.js';

describe('canAcquire', () => {
  it('lease acquisition: free, own, released or expired leases only', () => {
    const now = new Date('2026-12-02T10:00:10Z');
    expect(canAcquire(undefined, 'me', now)).toBe(true);
    expect(canAcquire({ holderIdentity: null }, 'me', now)).toBe(true);
    expect(
      canAcquire(
        { holderIdentity: 'me', renewTime: '2026-12-02T10:00:09.000000Z', leaseDurationSeconds: 15 },
        'me',
        now,
      ),
    ).toBe(true);
    expect(
      canAcquire(
        { holderIdentity: 'other', renewTime: '2026-12-02T10:00:00.000000Z', leaseDurationSeconds: 15 },
        'me',
        now,
      ),
    ).toBe(false);
    expect(
      canAcquire(
        { holderIdentity: 'other', renewTime: '2026-12-02T09:59:50.000000Z', leaseDurationSeconds: 15 },
        'me',
        now,
      ),
    ).toBe(true);
  });
});
