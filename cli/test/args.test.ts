import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseDuration, programName } from '../src/args.js';

describe('parseDuration', () => {
  it('reads seconds, minutes, hours and combinations; a bare number is seconds', () => {
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('45')).toBe(45_000);
    expect(parseDuration('250ms')).toBe(250);
  });
  it('refuses anything else as an invalid argument', () => {
    for (const bad of ['', 'soon', '10x', '1h 30m', '-5s'])
      expect(() => parseDuration(bad), bad).toThrow(InvalidArgumentError);
  });
});

describe('programName', () => {
  it('is "kubectl kpromo" when run as the kubectl plugin', () => {
    expect(programName('/usr/local/bin/kubectl-kpromo')).toBe('kubectl kpromo');
    expect(programName('/repo/cli/dist/kpromo.mjs')).toBe('kpromo');
    expect(programName(undefined)).toBe('kpromo');
  });
});
