import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { countResults, timeReport } from './countReporter.js';

const fixtures = join(import.meta.dirname, 'reporterFixtures');
/** Runs real vitest on a fixture suite with the reporter and returns its closing line and exit code. */
function run(file: string): { line: string; status: number | null } {
  const r = spawnSync(process.execPath, [join(import.meta.dirname, '../node_modules/vitest/vitest.mjs'), 'run', file], {
    cwd: fixtures,
    encoding: 'utf8',
    env: { ...process.env, CI: 'true', NO_COLOR: '1' },
  });
  const lines = `${r.stdout}`.split('\n').filter((l) => /^\d+ passed, \d+ failed/.test(l));
  return { line: lines.at(-1) ?? '', status: r.status };
}

describe('closing "N passed, N failed" line', () => {
  it('counts the tests of a module whose afterAll failed as failed (real vitest run)', () => {
    const r = run('afterAllFails.fixture.ts');
    expect(r.status).not.toBe(0);
    expect(r.line).toBe('0 passed, 1 failed');
  });
  it('counts an unhandled error as a failure (real vitest run)', () => {
    const r = run('unhandled.fixture.ts');
    expect(r.status).not.toBe(0);
    expect(r.line).toMatch(/^1 passed, [1-9]\d* failed$/);
  });
  it('counts each test once when some tests of a module fail (real vitest run)', () => {
    const r = run('oneFails.fixture.ts');
    expect(r.status).not.toBe(0);
    expect(r.line).toBe('1 passed, 1 failed');
  });
  it('reads 0 failed only for a passing run (real vitest run)', () => {
    const r = run('passes.fixture.ts');
    expect(r.status).toBe(0);
    expect(r.line).toBe('1 passed, 0 failed');
  });
  it('never reads 0 failed for an interrupted or otherwise failed run', () => {
    expect(countResults([], 0, 'interrupted')).toEqual({ passed: 0, failed: 1, skipped: 0 });
    expect(countResults([{ failed: false, tests: ['passed'] }], 0, 'failed').failed).toBe(1);
    expect(countResults([{ failed: false, tests: ['passed', 'skipped'] }], 0, 'passed')).toEqual({
      passed: 1,
      failed: 0,
      skipped: 1,
    });
  });
});

describe('where the time went', () => {
  it('sums file time per project (largest first) and lists the slowest files', () => {
    const lines = timeReport(
      [
        { file: 'a.int.test.ts', project: 'integration', ms: 30_000 },
        { file: 'b.test.ts', project: 'unit', ms: 1_500 },
        { file: 'c.int.test.ts', project: 'integration', ms: 12_250 },
        { file: 'd.test.ts', project: 'unit', ms: 500 },
      ],
      2,
    );
    expect(lines).toEqual([
      'where the time went (file time summed per project; files run in parallel):',
      '  integration: 42.3 s in 2 files',
      '  unit: 2.0 s in 2 files',
      'slowest 2 files:',
      '    30.0 s  a.int.test.ts',
      '    12.3 s  c.int.test.ts',
    ]);
    expect(timeReport([])).toEqual([]);
  });
});
