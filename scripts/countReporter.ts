import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SerializedError } from 'vitest';
import type { Reporter, TestModule, TestRunEndReason } from 'vitest/node';
import { cacheRoot } from '../test/cluster/paths.js';

/** The integration files' times of the latest run; `yarn test:times` copies them into test/fileTimes.json. */
export const FILE_TIMES_LOG = () => join(cacheRoot(), 'logs', 'file-times.json');

/** Pure: the closing counts. A failing run never reads "0 failed". */
export function countResults(
  modules: ReadonlyArray<{ failed: boolean; tests: ReadonlyArray<'passed' | 'failed' | 'skipped' | 'pending'> }>,
  unhandledErrors: number,
  reason: TestRunEndReason,
): { passed: number; failed: number; skipped: number } {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for (const m of modules) {
    // A module that failed (an error at import, in beforeAll or afterAll) fails all its tests: a
    // passing test whose cleanup broke the suite is not a pass.
    if (m.failed) {
      failed += Math.max(1, m.tests.length);
      continue;
    }
    for (const s of m.tests) {
      if (s === 'passed') passed++;
      else if (s === 'failed') failed++;
      else skipped++;
    }
  }
  failed += unhandledErrors;
  // Interrupted, a failed global setup, or anything else vitest calls a failure.
  if (reason !== 'passed' && failed === 0) failed = 1;
  return { passed, failed, skipped };
}

/** One test file's time: setup (environment, harness, import) and its tests and hooks. */
export interface ModuleTime {
  file: string;
  project: string;
  ms: number;
}

/**
 * Pure: where a run's time went, as lines: per project the summed file time (files run in
 * parallel, so this is work, not wall time), then the `top` slowest files.
 */
export function timeReport(times: readonly ModuleTime[], top = 10): string[] {
  if (!times.length) return [];
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const byProject = new Map<string, number>();
  for (const t of times) byProject.set(t.project, (byProject.get(t.project) ?? 0) + t.ms);
  const lines = ['where the time went (file time summed per project; files run in parallel):'];
  for (const [project, ms] of [...byProject].sort((a, b) => b[1] - a[1]))
    lines.push(`  ${project || 'default'}: ${s(ms)} in ${times.filter((t) => t.project === project).length} files`);
  lines.push(`slowest ${Math.min(top, times.length)} files:`);
  for (const t of [...times].sort((a, b) => b.ms - a.ms).slice(0, top))
    lines.push(`  ${s(t.ms).padStart(8)}  ${t.file}`);
  return lines;
}

/** Prints where the time went, then the plain "N passed, N failed" closing line CI readers look for. */
export default class CountReporter implements Reporter {
  onTestRunEnd(
    modules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
    reason: TestRunEndReason,
  ): void {
    const { passed, failed, skipped } = countResults(
      modules.map((m) => ({
        // The module itself failed (import, beforeAll/afterAll), not just some of its tests.
        failed:
          m.errors().length > 0 ||
          (m.state() === 'failed' && ![...m.children.allTests()].some((t) => t.result().state === 'failed')),
        tests: [...m.children.allTests()].map((t) => t.result().state),
      })),
      unhandledErrors.length,
      reason,
    );
    const times = modules.map((m) => {
      const d = m.diagnostic();
      return {
        file: m.relativeModuleId,
        project: m.project.name,
        ms: d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration + d.duration,
      };
    });
    const integration = times.filter((t) => t.project.startsWith('integration'));
    if (integration.length && reason === 'passed') {
      mkdirSync(join(cacheRoot(), 'logs'), { recursive: true });
      const seconds = Object.fromEntries(integration.map((t) => [t.file, Math.round(t.ms / 100) / 10]));
      writeFileSync(FILE_TIMES_LOG(), `${JSON.stringify(seconds, null, 2)}\n`);
    }
    const report = timeReport(times);
    if (report.length) console.log(`\n${report.join('\n')}`);
    if (reason === 'interrupted') console.log('\nthe run was interrupted');
    console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  }
}
