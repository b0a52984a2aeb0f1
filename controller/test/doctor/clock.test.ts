import { describe, expect, it } from 'vitest';
import { clockResult, clockSkewMs } from '../../src/doctor/clock.js';

const at = (s: number) => new Date(Date.UTC(2026, 11, 5, 12, 0, 0) + s * 1000);

describe('doctor clock check', () => {
  it('counts only what lies outside the request window and the Date header second', () => {
    expect(clockSkewMs(at(10), at(10), at(10.2))).toBe(0);
    expect(clockSkewMs(at(9), at(10), at(10.2))).toBe(0);
    expect(clockSkewMs(at(40), at(10), at(10.2))).toBe(28_800);
    expect(clockSkewMs(at(-80), at(10), at(10.2))).toBe(-89_000);
  });

  it('passes under 5 s, warns from 5 s, fails from 60 s, saying which side', () => {
    expect(clockResult('api', 0)).toMatchObject({
      status: 'pass',
      message: 'this machine and the apiserver agree (within 1 s)',
    });
    expect(clockResult('api', 7_000)).toMatchObject({
      status: 'warn',
      message: 'the apiserver is 7s ahead of this machine',
    });
    expect(clockResult('api', -89_000)).toMatchObject({
      status: 'fail',
      message: expect.stringContaining('the apiserver is 89s behind this machine'),
    });
  });
});
