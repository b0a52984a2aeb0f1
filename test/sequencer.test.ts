import { describe, expect, it } from 'vitest';
import { ensureHelm } from './cluster/paths.js';
import { needRank } from './sequencer.js';

describe('integration file order (test/sequencer.ts)', () => {
  it('ranks a file by the last-built component it declares, and a file declaring none first', () => {
    expect(needRank("import x from 'y';\nconst a = 1;")).toBe(-1);
    expect(needRank("await needComponents('helm');")).toBe(0);
    expect(needRank("await needComponents('argo', 'flux');")).toBe(5);
    // llama.cpp's server is a download and its files are long: they run early, after kubectl's.
    expect(needRank('await needComponents("kubectl", "llama");')).toBe(2);
    // cosign is built last: its files run last.
    expect(needRank("await needComponents('cosign', 'helm');")).toBe(9);
    expect(needRank("await needComponents('prometheus');")).toBe(8);
    expect(needRank("await needComponents('otel');\nawait needComponents('flux-crds');")).toBe(6);
  });
});

describe('component declarations (test/cluster/need.ts)', () => {
  it('refuses a component this file did not declare, naming the line to add', () => {
    // Thrown before any build starts: a cold machine would otherwise build helm inside a hook.
    expect(() => ensureHelm()).toThrow("add `await needComponents('helm')`");
  });
});
