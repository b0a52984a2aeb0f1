import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the plain "N passed, N failed" closing line CI readers look for. Tests that never ran
 * because their file failed (an error in a hook or at import) count as failed, not skipped.
 */
export default class CountReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const m of modules) {
      const moduleFailed = m.state() === 'failed';
      let counted = 0;
      for (const t of m.children.allTests()) {
        counted++;
        const s = t.result().state;
        if (s === 'passed') passed++;
        else if (s === 'failed' || moduleFailed) failed++;
        else skipped++;
      }
      if (moduleFailed && counted === 0) failed++;
    }
    console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  }
}
