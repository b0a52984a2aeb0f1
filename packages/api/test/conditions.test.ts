import { describe, expect, it } from 'vitest';
import { getCondition, isConditionTrue, setCondition } from '../src/index.js';

describe('setCondition', () => {
  const t0 = new Date('2026-12-02T10:00:00Z');
  const t1 = new Date('2026-12-02T11:00:00Z');

  it('adds a condition with observedGeneration and a second-precision timestamp', () => {
    const c = setCondition([], { type: 'Ready', status: 'True', reason: 'Ok', message: 'fine' }, 3, t0);
    expect(c).toEqual([
      {
        type: 'Ready',
        status: 'True',
        reason: 'Ok',
        message: 'fine',
        observedGeneration: 3,
        lastTransitionTime: '2026-12-02T10:00:00Z',
      },
    ]);
  });

  it('keeps lastTransitionTime when the status does not change, updates it when it does', () => {
    const a = setCondition([], { type: 'Ready', status: 'True', reason: 'Ok', message: 'fine' }, 1, t0);
    const b = setCondition(a, { type: 'Ready', status: 'True', reason: 'StillOk', message: 'fine' }, 2, t1);
    expect(b[0].lastTransitionTime).toBe('2026-12-02T10:00:00Z');
    expect(b[0].observedGeneration).toBe(2);
    const c = setCondition(b, { type: 'Ready', status: 'False', reason: 'Broken', message: 'no' }, 2, t1);
    expect(c[0].lastTransitionTime).toBe('2026-12-02T11:00:00Z');
    expect(isConditionTrue(c, 'Ready')).toBe(false);
  });

  it('does not mutate its input and keeps other conditions', () => {
    const a = setCondition([], { type: 'A', status: 'True', reason: 'R', message: '' }, 1, t0);
    const b = setCondition(a, { type: 'B', status: 'False', reason: 'R', message: '' }, 1, t0);
    expect(a).toHaveLength(1);
    expect(b.map((c) => c.type)).toEqual(['A', 'B']);
    expect(getCondition(b, 'B')?.status).toBe('False');
  });
});
