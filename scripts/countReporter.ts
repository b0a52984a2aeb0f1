import type { SerializedError } from 'vitest';
import type { Reporter, TestModule, TestRunEndReason } from 'vitest/node';

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

/** Prints the plain "N passed, N failed" closing line CI readers look for. */
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
    if (reason === 'interrupted') console.log('\nthe run was interrupted');
    console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  }
}
