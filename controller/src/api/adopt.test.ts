import { describe, expect, it } from 'vitest';
import { ScanGate } from './adopt.js';

describe('adoption scans', () => {
  it('run one per caller and at most two at once; a finished scan frees its place', () => {
    const gate = new ScanGate(2);
    const alice = gate.enter('alice');
    expect(() => gate.enter('alice')).toThrow(/an adoption scan for alice is still running/);
    const bob = gate.enter('bob');
    expect(() => gate.enter('carol')).toThrow(
      '2 adoption scans are running (at most 2 at once); retry in a few seconds',
    );
    alice();
    expect(() => gate.enter('carol')).not.toThrow();
    bob();
    expect(() => gate.enter('alice')).not.toThrow();
  });
});
