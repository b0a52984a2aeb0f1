import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureHelm, REPO_ROOT } from './cluster/paths.js';
import fileTimes from './fileTimes.json' with { type: 'json' };
import { needRank, orderIntegrationFiles } from './sequencer.js';

describe('integration file order (test/sequencer.ts)', () => {
  it('ranks a file by the last-built component it declares, and a file declaring none first', () => {
    expect(needRank("import x from 'y';\nconst a = 1;")).toBe(-1);
    expect(needRank("await needComponents('helm');")).toBe(0);
    expect(needRank("await needComponents('argo', 'flux');")).toBe(5);
    // llama.cpp's server is a download and its files are long: they run early, after kubectl's.
    expect(needRank('await needComponents("kubectl", "llama");')).toBe(2);
    expect(needRank("await needComponents('cosign', 'helm');")).toBe(9);
    // Gitea is built last, beside Flux: the pull-request delivery files (Gitea and Flux) run last.
    expect(needRank("await needComponents('flux', 'gitea');")).toBe(10);
    expect(needRank("await needComponents('prometheus');")).toBe(8);
    expect(needRank("await needComponents('otel');\nawait needComponents('flux-crds');")).toBe(6);
  });
});

describe('integration files start longest first (orderIntegrationFiles)', () => {
  const files = [
    { file: 'a.int.test.ts', rank: -1 },
    { file: 'b.int.test.ts', rank: 2 },
    { file: 'c.int.test.ts', rank: -1 },
    { file: 'new.int.test.ts', rank: 5 },
    { file: 'd.int.test.ts', rank: 2 },
  ];
  const seconds = { 'a.int.test.ts': 10, 'b.int.test.ts': 180, 'c.int.test.ts': 90, 'd.int.test.ts': 30 };
  const order = (ready: boolean) => orderIntegrationFiles(files, seconds, ready).map((f) => f.file);

  it.each([
    // Components built: the longest first, a file never measured before all of them.
    [true, ['new.int.test.ts', 'b.int.test.ts', 'c.int.test.ts', 'd.int.test.ts', 'a.int.test.ts']],
    // Still building: the build order first, the longest first within a component's files.
    [false, ['c.int.test.ts', 'a.int.test.ts', 'b.int.test.ts', 'd.int.test.ts', 'new.int.test.ts']],
  ])('components ready %s → %j', (ready, expected) => {
    expect(order(ready)).toEqual(expected);
  });

  it('keeps the given order between files of equal time and rank', () => {
    const same = [
      { file: 'x', rank: 0 },
      { file: 'y', rank: 0 },
    ];
    expect(orderIntegrationFiles(same, { x: 5, y: 5 }, true).map((f) => f.file)).toEqual(['x', 'y']);
  });

  it('times only files that exist (test/fileTimes.json, refreshed by yarn test:times)', () => {
    const listed = Object.keys(fileTimes.seconds);
    expect(listed.length).toBeGreaterThan(50);
    expect(listed.filter((f) => !f.endsWith('.int.test.ts') || !existsSync(join(REPO_ROOT, f)))).toEqual([]);
  });
});

describe('component declarations (test/cluster/need.ts)', () => {
  it('refuses a component this file did not declare, naming the line to add', () => {
    // Thrown before any build starts: a cold machine would otherwise build helm inside a hook.
    expect(() => ensureHelm()).toThrow("add `await needComponents('helm')`");
  });
});
