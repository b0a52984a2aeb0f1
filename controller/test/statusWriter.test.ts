import { describe, expect, it } from 'vitest';
import { sameStatus } from '../src/reconcile/statusWriter.js';

describe('sameStatus', () => {
  it('ignores key order and undefined fields, as the apiserver returns them', () => {
    const ours = {
      observedGeneration: 2,
      versions: [{ environment: 'dev', tag: 'v1', health: 'Healthy', message: undefined }],
    };
    const theirs = { versions: [{ health: 'Healthy', tag: 'v1', environment: 'dev' }], observedGeneration: 2 };
    expect(JSON.stringify(ours) === JSON.stringify(theirs)).toBe(false); // what the old comparison saw
    expect(sameStatus(ours, theirs)).toBe(true);
  });
  it('sees real changes, including array order', () => {
    expect(sameStatus({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(sameStatus({ phase: 'Pending' }, { phase: 'Promoting' })).toBe(false);
    expect(sameStatus(undefined, {})).toBe(true);
  });
});
